package devices

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestTemplateWorkBoundedPerSecond: 20 discovery configs on one state
// topic (or on each of ten), each looping within the message's work budget, kept the reader
// busy ~30 ms per 40-byte message, so a burst of them made every other
// device's messages (and the rules they fire) wait for the whole burst.
// tmpl work is now bounded per second too: the burst's renderings past
// their topics' rate, or all topics' (ten of them), are skipped, counted
// and named on the entity, and a neighbour published right after the
// burst is read within the bound, not throttled.
func TestTemplateWorkBoundedPerSecond(t *testing.T) {
	for _, tc := range []struct {
		topics int
		// bound: the neighbour's wait (with -race, on a busy machine: 2 s
		// and 5 s were seen exceeded at load 16-24); unthrottled, the
		// burst takes about three minutes.
		bound time.Duration
	}{
		{1, 15 * time.Second},
		// The global bucket's capacity (4*MsgJBudget) is spent first.
		{10, 30 * time.Second},
	} {
		t.Run(fmt.Sprint(tc.topics, " hostile topics"), func(t *testing.T) { burnAndListen(t, tc.topics, tc.bound) })
	}
}

// burnAndListen publishes 20 burn configs on each of the given number of
// state topics, a burst on them, and a neighbour's state right after.
func burnAndListen(t *testing.T, topics int, bound time.Duration) {
	const burst = 300
	h := runHouse(t, overTCP(Options{}))
	burn := "{% set ns=namespace(c=0) %}{% for i in range(10000) %}{% set ns.c = ns.c + (value_json.v|length) %}{% endfor %}{{ ns.c }}"
	n := 20 * topics
	for i := range n {
		cfg := fmt.Sprintf(`{"name":"B","unique_id":"burn_%03d","state_topic":"burn/state/%d","value_template":%q,
			"device":{"identifiers":["burn_%03d"],"name":"burn %03d"}}`, i, i%topics, burn, i, i)
		h.send(t, fmt.Sprintf("homeassistant/sensor/burn_%03d/x/config", i), cfg, true)
	}
	h.send(t, "homeassistant/sensor/calm/t/config", `{"name":"T","unique_id":"calm_t","state_topic":"calm/state",
		"value_template":"{{ value_json.t }}","device":{"identifiers":["calm"],"name":"calm"}}`, true)
	testutil.Eventually(t, 10*time.Second, "the entities", func() bool {
		return len(stateIDs(h.c, "burn_")) == n && len(stateIDs(h.c, "calm")) == 1
	})
	calm := stateIDs(h.c, "calm")[0]
	for k := range burst {
		h.send(t, fmt.Sprint("burn/state/", k%topics), fmt.Sprintf(`{"v":"xxxxxxxxxx","i":%d}`, k), false)
	}
	start := time.Now()
	h.send(t, "calm/state", `{"t":7}`, false)
	if !testutil.Within(bound, func() bool {
		l, _ := h.c.Live(calm)
		return fmt.Sprint(l.Value) == "7"
	}) {
		l, _ := h.c.Live(calm)
		t.Fatalf("the neighbour's value %v %v after the burst (unread %q), refusals %+v",
			l.Value, bound, l.Unread, h.c.Refusals())
	}
	t.Logf("the neighbour was read %v after the burst", time.Since(start))
	if r := h.c.Refusals(); r.TemplateWorkThrottled == 0 {
		t.Errorf("Refusals = %+v, want throttled renderings counted", r)
	}
	throttled := 0
	for _, id := range stateIDs(h.c, "burn_") {
		l, _ := h.c.Live(id)
		if strings.Contains(l.Unread, "template work over its rate") {
			throttled++
		}
	}
	if throttled == 0 {
		t.Errorf("no burn entity's Unread says its rendering was over the rate")
	}
	if l, _ := h.c.Live(calm); l.Unread != "" {
		t.Errorf("the neighbour's Unread = %q, want none", l.Unread)
	}
}
