package devices

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// floodConfig is a Home Assistant device discovery config of n sensors on
// one state topic, each reading its own key: cheap templates, many routes.
func floodConfig(d, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"dev":{"ids":"flood%d","name":"flood %d"},"o":{"name":"x"},"cmps":{`, d, d)
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"c%d":{"p":"sensor","unique_id":"flood%d_c%d","stat_t":"flood/%d/s","val_tpl":"{{ value_json.v%d }}"}`, i, d, i, d, i)
	}
	b.WriteString("}}")
	return b.String()
}

// floodPayload is {"v0":0,…} with n keys (12.8 KB for 1,000).
func floodPayload(n int) []byte {
	m := make(map[string]int, n)
	for i := range n {
		m[fmt.Sprint("v", i)] = i
	}
	p, _ := json.Marshal(m)
	return p
}

// TestFloodOfCheapTemplatesThrottled: 1,000 sensors of {{ value_json.vN }}
// on each of nine topics and ~90 messages a second of a 12.8 KB payload
// on them stayed within the work per second they were charged (a route
// and its template's few operations), but each message cost ~12 ms (its
// payload copied per rendering) and fanned out what changed: the reader
// fell behind, a neighbour's change and the rules it fires waited seconds,
// and nothing was counted. A rendering is now charged its route and the
// change it may fan out: the flood's topics are throttled (counted, logged,
// said on their entities) and the neighbour's changes, at rest, still
// reach subscribers promptly. The catalog's clock moves 1/90 s per flood
// message sent, so that what the buckets grant does not depend on how
// fast a loaded machine sends and reads.
func TestFloodOfCheapTemplatesThrottled(t *testing.T) {
	const devs, sensors = 9, 1000
	clk := &floodClock{}
	clk.ns.Store(time.Date(2026, 12, 6, 22, 0, 0, 0, time.UTC).UnixNano())
	h := runHouse(t, houseOptions{Options: Options{Now: clk.now}, Conn: viaTCP, MaxPacketBytes: 64 << 20})
	begun := time.Now()
	for d := range devs {
		h.send(t, fmt.Sprintf("homeassistant/device/flood%d/config", d), floodConfig(d, sensors), true)
	}
	h.send(t, "homeassistant/sensor/calm/t/config", `{"name":"T","unique_id":"calm_t","state_topic":"calm/state",
		"value_template":"{{ value_json.t }}","device":{"identifiers":["calm"],"name":"calm"}}`, true)
	testutil.Eventually(t, 6*waitTime, "the entities", func() bool {
		return len(stateIDs(h.c, "flood")) == devs*sensors && len(stateIDs(h.c, "calm")) == 1
	})
	t.Logf("the flood's %d entities discovered after %v", devs*sensors, time.Since(begun))
	calm := stateIDs(h.c, "calm")[0]
	var seen sync.Map // the neighbour's value -> when it reached a subscriber
	h.c.Subscribe(func(ch Change) {
		if ch.ID == calm {
			seen.Store(fmt.Sprint(ch.Value), time.Now())
		}
	})
	sent := floodNeighbour(t, h, clk, devs, sensors)
	// Unthrottled, the reader fell behind by ~0.3 s (more under -race)
	// every second of the flood.
	const bound = 5 * time.Second
	var longest time.Duration
	for v, at := range sent {
		testutil.Eventually(t, 4*waitTime, "the neighbour's change "+v, func() bool { _, ok := seen.Load(v); return ok })
		got, _ := seen.Load(v)
		d := got.(time.Time).Sub(at)
		if d > bound {
			t.Errorf("the neighbour's change to %s reached subscribers %v after it was sent, want within %v", v, d, bound)
		}
		longest = max(longest, d)
	}
	t.Logf("%d changes of the neighbour during the flood, the longest reached subscribers after %v", len(sent), longest)
	checkFloodThrottled(t, h, calm)
}

// floodClock is the catalog's clock, moved by the test's goroutine.
type floodClock struct{ ns atomic.Int64 }

func (f *floodClock) now() time.Time { return time.Unix(0, f.ns.Load()).UTC() }

// floodNeighbour publishes 90 flood messages a second (of clk; at most as
// fast in real time) on devs topics for six seconds, and a new value of
// the neighbour every quarter of a second; it returns when (in real time)
// each value was sent.
func floodNeighbour(t *testing.T, h *house, clk *floodClock, devs, sensors int) map[string]time.Time {
	p := string(floodPayload(sensors))
	sent := map[string]time.Time{}
	tick := time.NewTicker(time.Second / 90)
	defer tick.Stop()
	for k := range 6 * 90 {
		<-tick.C
		clk.ns.Add(int64(time.Second / 90))
		h.send(t, fmt.Sprint("flood/", k%devs, "/s"), p, false)
		if k%22 == 0 {
			v := fmt.Sprint(k)
			sent[v] = time.Now()
			h.send(t, "calm/state", `{"t":`+v+`}`, false)
		}
	}
	return sent
}

// checkFloodThrottled checks that the flood was throttled, visibly, and
// the neighbour not.
func checkFloodThrottled(t *testing.T, h *house, calm string) {
	t.Helper()
	if r := h.c.Refusals(); r.TemplateWorkThrottled == 0 {
		t.Errorf("Refusals = %+v, want the flood's renderings throttled", r)
	}
	if !strings.Contains(h.logs.String(), "template work over its rate") {
		t.Errorf("no throttling logged")
	}
	throttled := 0
	for _, id := range stateIDs(h.c, "flood") {
		if l, _ := h.c.Live(id); strings.Contains(l.Unread, "template work over its rate") {
			throttled++
		}
	}
	if throttled == 0 {
		t.Errorf("no flood entity's Unread says its rendering was over the rate")
	}
	if l, _ := h.c.Live(calm); l.Unread != "" {
		t.Errorf("the neighbour's Unread = %q, want none", l.Unread)
	}
}

// BenchmarkIngestFlood is one 12.8 KB message on a topic that 1,000 cheap
// templates read, with a subscriber and the clock a second on (never
// throttled): what a rendering really costs the reader.
func BenchmarkIngestFlood(b *testing.B) {
	c, clk := newTestCatalog()
	c.HandleMessage(mqtt.Message{Topic: "homeassistant/device/flood0/config", Payload: []byte(floodConfig(0, 1000))})
	c.Subscribe(func(Change) {})
	p := floodPayload(1000)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		clk.t = clk.t.Add(time.Second)
		c.HandleMessage(mqtt.Message{Topic: "flood/0/s", Payload: p})
	}
}
