package devices

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// TestNeverSilently: what cannot be modelled is tagged and described on
// the device entry, logged once per definition, and counted.
func TestNeverSilently(t *testing.T) {
	var logs bytes.Buffer
	c, _ := newTestCatalog(func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	devs := `[
 {"ieee_address":"0x01","type":"Router","friendly_name":"plug","supported":true,"definition":{"vendor":"V","model":"P1","description":"Plug","exposes":[
   {"type":"switch","features":[{"type":"binary","name":"state","property":"state","access":7,"value_on":"ON","value_off":"OFF"}]}]}},
 {"ieee_address":"0x02","type":"Router","friendly_name":"odd","supported":true,"definition":{"vendor":"V","model":"O1","description":"Odd","exposes":[
   {"type":"numeric","name":"power","property":"power","access":1,"unit":"W"},
   {"type":"matter_thing","name":"gizmo","property":"gizmo","access":3},
   {"type":"numeric","access":1,"unit":"W"}]}},
 {"ieee_address":"0x03","type":"EndDevice","friendly_name":"new","supported":false,"definition":null,"model_id":"TS0001"}
]`
	for i := 0; i < 2; i++ { // the second, identical list rebuilds from the cache
		c.HandleMessage(msg("zigbee2mqtt/bridge/devices", devs))
	}
	c.HandleMessage(msg("zigbee2mqtt/bridge/devices", strings.Replace(devs, `"Plug"`, `"Smart plug"`, 1)))
	if got, want := c.Coverage(), (Coverage{Devices: 3, Partial: 1, Unmodelled: 1}); got != want {
		t.Errorf("coverage %+v, want %+v", got, want)
	}
	s := c.Snapshot()
	odd, _ := s.Get("odd")
	if !hasTag(odd, model.TagPartial) || !strings.Contains(odd.Description, `Not fully modelled: expose "gizmo" of unknown type "matter_thing"; a numeric expose without property or name.`) {
		t.Errorf("odd: %v %q", odd.Tags, odd.Description)
	}
	if _, ok := s.Get("odd.power"); !ok {
		t.Error("what can be modelled still is")
	}
	if n, _ := s.Get("new"); !hasTag(n, model.TagUnmodelled) {
		t.Errorf("new: %v", n.Tags)
	}
	if p, _ := s.Get("plug"); hasTag(p, model.TagPartial) || hasTag(p, model.TagUnmodelled) {
		t.Errorf("plug: %v", p.Tags)
	}
	out := logs.String()
	if n := strings.Count(out, "not fully modelled"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, out)
	}
	if n := strings.Count(out, "not modelled: no definition"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, out)
	}
}

// TestCoverageTakesNoCatalogLock: /healthz reads Coverage; while a big
// device list commits (the whole converter library holds the catalog's
// lock for seconds on a loaded machine) it must still answer.
func TestCoverageTakesNoCatalogLock(t *testing.T) {
	c := NewCatalog(Options{Logger: quietLogger()})
	c.mu.Lock()
	defer c.mu.Unlock()
	got := make(chan Coverage, 1)
	go func() { got <- c.Coverage() }()
	select {
	case <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("Coverage waited for the catalog's lock")
	}
}

// TestPendingBoundsTopics: a payload on a topic nobody routes yet is kept
// for a discovery that may come, but not on a topic longer than any real
// one (an attacker round: 60,000-byte topics).
func TestPendingBoundsTopics(t *testing.T) {
	c, _ := newTestCatalog()
	short, long := "zigbee2mqtt/later", "zigbee2mqtt/"+strings.Repeat("t", maxPendingTopic)
	c.HandleMessage(msg(short, `{"state":"ON"}`))
	c.HandleMessage(msg(long, `{"state":"ON"}`))
	c.ingest.Lock()
	defer c.ingest.Unlock()
	if _, ok := c.pending[short]; !ok {
		t.Error("the payload on a short topic was not kept")
	}
	if _, ok := c.pending[long]; ok {
		t.Error("the payload on a topic over maxPendingTopic was kept")
	}
}
