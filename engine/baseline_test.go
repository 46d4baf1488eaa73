package engine

import (
	"context"
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

	// Changed while the server was down, a plain message: a change from
	// the recorded value. (The broker keeps no copy: the new process's
	// first value is the device's message after it started.)
	if err := h.client.Publish(ctx, doorTopic, nil, 1, true); err != nil {
		t.Fatal(err)
	}
	before = len(runs)
	h.restartProcess(2, nil, false)
	if err := h.client.Publish(ctx, doorTopic, []byte(`{"contact":true}`), 1, false); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the first plain message fires", func() bool { return len(h.firings("door-any")) > before })
	const want = "front_door.contact changed from false (its value before the restart) to true"
	if runs = h.firings("door-any"); len(runs) != before+1 || !strings.Contains(string(runs[0].Envelope), want) {
		t.Fatalf("%d firings after %d; want %q in %s", len(runs), before, want, runs[0].Envelope)
	}
}

// doorTopic is the demo front door's state topic.
const doorTopic = "zigbee2mqtt/front_door"

// TestRestartRetainedCopyIsBaseline: the first value a start reads with
// the retain flag is the broker's stored copy, not a report of now: a
// baseline whatever the history recorded, whichever of the catalog and
// the engine starts first. A retained open followed by a plain closed
// (recorded) fires nothing at the restart, nor does a retained change
// published while the server was down; the next live change fires once,
// from the copy's value.
func TestRestartRetainedCopyIsBaseline(t *testing.T) {
	ctx := context.Background()
	for i, tc := range []struct {
		name         string
		catalogFirst bool
		whileDown    bool // the retained true is published while the server is down
	}{
		{"stale copy, engine first", false, false},
		{"stale copy, catalog first", true, false},
		{"changed while down, engine first", false, true},
		{"changed while down, catalog first", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHouse(t, Config{})
			h.deploy(`{"name":"door-any","mode":"parallel","triggers":[{"id":"d","state":"front_door.contact"}],
			 "steps":[{"id":"note","set":{"seen":"{{ trigger.value }}"}}]}`)
			pub := func(payload string, retain bool) {
				t.Helper()
				if err := h.client.Publish(ctx, doorTopic, []byte(payload), 1, retain); err != nil {
					t.Fatal(err)
				}
			}
			if !tc.whileDown {
				pub(`{"contact":true}`, true)
				testutil.Eventually(t, 5*time.Second, "the retained true", func() bool { l, _ := h.devs.Live("front_door.contact"); return l.Value == true })
			}
			pub(`{"contact":false}`, tc.whileDown) // plain: the broker's copy stays true
			testutil.Eventually(t, 5*time.Second, "the plain false", func() bool { l, _ := h.devs.Live("front_door.contact"); return l.Value == false })
			h.eng.FlushHistory()
			h.eng.Close() // the firings before the restart are recorded
			before := len(h.firings("door-any"))
			h.restartProcess(70+i, func() {
				if tc.whileDown {
					pub(`{"contact":true}`, true)
				}
			}, tc.catalogFirst)
			testutil.Eventually(t, 5*time.Second, "the retained copy read", func() bool { l, _ := h.devs.Live("front_door.contact"); return l.Value == true })
			pub(`{"contact":false}`, false)
			testutil.Eventually(t, 5*time.Second, "the live change fires", func() bool { return len(h.firings("door-any")) > before })
			h.eng.Close() // waits for the firings and writes their records
			runs := h.firings("door-any")
			if len(runs) != before+1 || !strings.Contains(string(runs[0].Envelope), "front_door.contact changed from true to false") {
				t.Fatalf("%d firings after the restart, want 1 (the live change); newest %s", len(runs)-before, runs[0].Envelope)
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
