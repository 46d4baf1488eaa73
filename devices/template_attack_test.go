package devices

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestHostileTemplatesOverMQTT: retained discovery configs whose
// value_template printed a namespace holding itself killed the process
// (fatal stack overflow, at every start while the broker kept them), and
// one comparing nested lists froze it for minutes (issue 28). Now the
// catalog stays up, a neighbour on the same topic keeps updating, the
// namespace prints as Python prints it, and the over-budget rendering is
// counted and named in Refusals (on /healthz) and on the entity's live
// value (Unread) while its state keeps its value.
func TestHostileTemplatesOverMQTT(t *testing.T) {
	h := runHouse(t, overTCP(Options{}))
	configs := []struct{ id, tpl string }{
		{"ok", "{{ value_json.t }}"},
		{"cycle", "{% set ns = namespace(a=1) %}{% set ns.a = ns %}{{ ns }}{{ value_json.t }}"},
		{"walk", "{% set a=[0]*4000 %}{% set c=[0]*4000 %}{% set b=[a]*4000 %}{% set d=[c]*4000 %}{{ b == d }}{{ value_json.t }}"},
		{"empty", "{{ ([] * 9000000000000000000) | length }}{{ value_json.t }}"},
	}
	for _, c := range configs {
		cfg := fmt.Sprintf(`{"name":"T","unique_id":"hostile_%s","state_topic":"hostile/st","value_template":%q,
			"device":{"identifiers":["hostile_%s"],"name":"hostile %s"}}`, c.id, c.tpl, c.id, c.id)
		h.send(t, "homeassistant/sensor/hostile_"+c.id+"/t/config", cfg, true)
	}
	testutil.Eventually(t, 10*time.Second, "the four entities", func() bool { return len(stateIDs(h.c, "hostile_")) == len(configs) })
	value := func(prefix string) string {
		ids := stateIDs(h.c, prefix)
		if len(ids) != 1 {
			return ""
		}
		l, _ := h.c.Live(ids[0])
		return fmt.Sprint(l.Value)
	}
	for _, v := range []string{"1", "2"} {
		testutil.Eventually(t, 10*time.Second, "the neighbour at t="+v, func() bool {
			if value("hostile_ok") == v {
				return true
			}
			h.send(t, "hostile/st", `{"t":`+v+`}`, false)
			return false
		})
	}
	if got, want := value("hostile_cycle"), "<Namespace {'a': <Namespace {...}>}>2"; got != want {
		t.Errorf("the namespace printed %q, want %q", got, want)
	}
	if got := value("hostile_empty"); got != "02" {
		t.Errorf("the empty repeat printed %q, want %q", got, "02")
	}
	walk := stateIDs(h.c, "hostile_walk")[0]
	l, _ := h.c.Live(walk)
	if l.Value != nil {
		t.Errorf("the over-budget state holds %v, want no value", l.Value)
	}
	if !strings.Contains(l.Unread, "could not be read") || !strings.Contains(l.Unread, "too much work") {
		t.Errorf("the over-budget state's Unread = %q, want the reason on the entity", l.Unread)
	}
	if l, _ := h.c.Live(stateIDs(h.c, "hostile_ok")[0]); l.Unread != "" {
		t.Errorf("the neighbour's Unread = %q, want none", l.Unread)
	}
	r := h.c.Refusals()
	if r.TemplateFailures < 2 || !strings.Contains(r.LastTemplateFailure, walk+": template needs too much work") {
		t.Errorf("Refusals = %+v, want the walk's failure named", r)
	}
}
