package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// restartProcess stops the engine and starts a new process over the same
// data folder and broker: a new connection and catalog, whose first
// values are the broker's retained ones. whileDown runs between the two.
// With catalogFirst the catalog has its first values before the engine
// starts (cmd/pilothouse starts them in that order, and retained messages
// may come first or not).
func (h *house) restartProcess(n int, whileDown func(), catalogFirst bool) {
	h.t.Helper()
	h.eng.FlushHistory()
	h.stop()
	if whileDown != nil {
		whileDown()
	}
	c := h.dial(h.broker.URL(), "engine-restart-"+itoa(n), 0)
	h.devs = newCatalog()
	if !catalogFirst {
		h.start() // the engine subscribes before the catalog hears anything
	}
	h.listen(c)
	if catalogFirst {
		testutil.Eventually(h.t, 5*time.Second, "the retained door state", func() bool {
			l, _ := h.devs.Live("front_door.contact")
			return l.Value != nil
		})
		h.start()
	}
}

// TestRestartIsNoChange: after a restart the first value of a watched
// state is a baseline restored from the state history: the same value
// fires nothing, a value that changed while the server was down fires as
// a change from the recorded one, and the trace says so.
func TestRestartIsNoChange(t *testing.T) {
	ctx := context.Background()
	h := newHouse(t, Config{})
	h.deploy(`{"name":"door-any","mode":"parallel","triggers":[{"id":"d","state":"front_door.contact"}],
	 "steps":[{"id":"note","set":{"seen":"{{ trigger.value }}"}}]}`)
	h.deploy(`{"name":"door-opened","mode":"parallel","triggers":[{"id":"o","state":"front_door.contact","to":false}],
	 "steps":[{"id":"note","set":{"seen":"{{ trigger.value }}"}}]}`)
	for _, v := range []bool{false, true} {
		if err := h.sim.Trigger(ctx, "front_door", map[string]any{"contact": v}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 5*time.Second, "the door change", func() bool {
			l, _ := h.devs.Live("front_door.contact")
			return l.Value == v
		})
	}
	testutil.Eventually(t, 5*time.Second, "two firings before the restart", func() bool { return len(h.firings("door-any")) >= 2 })
	before := len(h.firings("door-any"))
	opened := len(h.firings("door-opened"))

	// Same value after the restart: a baseline. The next real change
	// (closed → open) is the only firing of both rules.
	h.restartProcess(1, nil, false)
	testutil.Eventually(t, 5*time.Second, "the retained door state", func() bool {
		l, _ := h.devs.Live("front_door.contact")
		return l.Value == true
	})
	if err := h.sim.Trigger(ctx, "front_door", map[string]any{"contact": false}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the real change fires", func() bool { return len(h.firings("door-opened")) > opened })
	runs := h.firings("door-any")
	if got := len(runs) - before; got != 1 || !strings.Contains(string(runs[0].Envelope), "front_door.contact changed from true to false") {
		t.Fatalf("after a restart with the same value: %d new firings (want 1, the real change); newest %s", got, runs[0].Envelope)
	}

	// Changed while the server was down: a change from the recorded value.
	before = len(runs)
	for i, tc := range []struct {
		catalogFirst bool
		to           bool
		want         string
	}{
		{false, true, "front_door.contact changed from false (its value before the restart) to true"},
		{true, false, "front_door.contact changed from true (its value before the restart) to false"},
	} {
		h.restartProcess(2+i, func() {
			if err := h.sim.Trigger(ctx, "front_door", map[string]any{"contact": tc.to}); err != nil {
				t.Fatal(err)
			}
		}, tc.catalogFirst)
		testutil.Eventually(t, 5*time.Second, "the change while down fires", func() bool { return len(h.firings("door-any")) > before })
		runs = h.firings("door-any")
		if len(runs) != before+1 || !strings.Contains(string(runs[0].Envelope), tc.want) {
			t.Fatalf("catalog first %v: %d firings after %d; want %q in %s", tc.catalogFirst, len(runs), before, tc.want, runs[0].Envelope)
		}
		before = len(runs)
	}
}

// TestRestartChangeFiresOnce: a state that changed while the server was
// down fires once, at the first start; the value seen then is the value
// before the next restart, so later restarts with no change in between
// fire nothing, whichever of the catalog and the engine starts first.
// A second rule, on a state changed during every downtime, shows each
// start has replayed its first values.
func TestRestartChangeFiresOnce(t *testing.T) {
	for i, catalogFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("catalog first %v", catalogFirst), func(t *testing.T) {
			h := newHouse(t, Config{})
			h.deploy(`{"name":"opened","mode":"parallel","triggers":[{"id":"o","state":"front_door.contact","to":false}],
			 "steps":[{"id":"note","set":{"seen":"{{ trigger.value }}"}}]}`)
			h.deploy(`{"name":"setpoint","mode":"parallel","triggers":[{"id":"s","state":"living_thermostat.occupied_heating_setpoint"}],
			 "steps":[{"id":"note","set":{"seen":"{{ trigger.value }}"}}]}`)
			h.set("living_thermostat", "occupied_heating_setpoint", 21.0)
			h.set("front_door", "contact", false)
			h.set("front_door", "contact", true)
			testutil.Eventually(t, 5*time.Second, "the live firing", func() bool { return len(h.firings("opened")) == 1 })
			setpoints := len(h.firings("setpoint"))
			for n, sp := range []float64{22, 23, 24} {
				h.restartProcess(20+10*i+n, func() {
					if n == 0 {
						h.set("front_door", "contact", false)
					}
					h.set("living_thermostat", "occupied_heating_setpoint", sp)
				}, catalogFirst)
				testutil.Eventually(t, 10*time.Second, "the setpoint firing of start "+itoa(n+1), func() bool { return len(h.firings("setpoint")) > setpoints+n })
			}
			h.eng.Close() // waits for the firings and writes their records
			runs := h.firings("opened")
			if len(runs) != 2 || !strings.Contains(string(runs[0].Envelope), "front_door.contact changed from true (its value before the restart) to false") {
				t.Fatalf("%d firings of opened, want the live one and the first start's; newest %s", len(runs), runs[0].Envelope)
			}
			if got := len(h.firings("setpoint")) - setpoints; got != 3 {
				t.Fatalf("%d firings of setpoint over 3 starts, want 3", got)
			}
		})
	}
}

// TestRestartWithHistoryOff: with the history off nothing records the
// value seen at a start, so no value from before a start is known (rows
// from when it was on are stale): a state changed while the server was
// down fires at no start, rather than at every one.
func TestRestartWithHistoryOff(t *testing.T) {
	h := newHouse(t, Config{})
	h.deploy(`{"name":"opened","mode":"parallel","triggers":[{"id":"o","state":"front_door.contact","to":false}],
	 "steps":[{"id":"note","set":{"seen":"{{ trigger.value }}"}}]}`)
	h.set("front_door", "contact", false)
	h.set("front_door", "contact", true)
	testutil.Eventually(t, 5*time.Second, "the live firing", func() bool { return len(h.firings("opened")) == 1 })
	h.cfg.History.Off = true
	for n := range 3 {
		h.restartProcess(40+n, func() {
			if n == 0 {
				h.set("front_door", "contact", false)
			}
		}, true)
	}
	h.eng.Close() // waits for the firings and writes their records
	if runs := h.firings("opened"); len(runs) != 1 {
		t.Fatalf("%d firings of opened, want only the live one; newest %s", len(runs), runs[0].Envelope)
	}
}

// TestRestartIsNoChangeForValuesTooLargeToRecord: a value over the
// history's bound is recorded as its size; after a restart the same value
// is still a baseline, and a real change still fires once.
func TestRestartIsNoChangeForValuesTooLargeToRecord(t *testing.T) {
	ctx := context.Background()
	h := newHouse(t, Config{})
	h.awaitDemo()
	h.deploy(`{"name":"lock-any","mode":"parallel","triggers":[{"id":"l","state":"front_lock.state"}],
	 "steps":[{"id":"note","set":{"seen":"{{ trigger.to_state }}"}}]}`)
	publish := func(v string) {
		t.Helper()
		if err := h.client.Publish(ctx, "zigbee2mqtt/front_lock", []byte(`{"state":"`+v+`"}`), 1, true); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "the lock's state", func() bool {
			l, _ := h.devs.Live("front_lock.state")
			return l.Value == v
		})
	}
	huge := strings.Repeat("L", 4000)
	publish(huge)
	testutil.Eventually(t, 10*time.Second, "the live firing", func() bool { return len(h.firings("lock-any")) >= 1 })
	before := len(h.firings("lock-any"))
	h.restartProcess(1, nil, false)
	testutil.Eventually(t, 10*time.Second, "the retained huge state", func() bool {
		l, _ := h.devs.Live("front_lock.state")
		return l.Value == huge
	})
	publish("LOCK")
	testutil.Eventually(t, 10*time.Second, "the real change fires", func() bool { return len(h.firings("lock-any")) > before })
	h.eng.Close() // waits for the firings and writes their records
	if got := len(h.firings("lock-any")) - before; got != 1 {
		t.Fatalf("after a restart with the same huge value: %d new firings, want 1 (the real change)", got)
	}
}
