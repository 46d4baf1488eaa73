package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestSelectorRuleSurvivesRestart: a rule by selector is armed again by
// a process that starts before its catalog has heard of any device (its
// body is checked against an empty catalog: nothing matches yet), and
// fires and calls once the devices are announced.
func TestSelectorRuleSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	h := newHouse(t, Config{})
	h.deploy(`{"name":"porch-on-motion","triggers":[{"id":"m","state":{"area":"hall","property":"occupancy"},"to":true}],
	  "steps":[{"id":"on","call":{"area":"porch","type":"light","action":"set"},"args":{"state":"ON"}}]}`)
	h.restartProcess(1, nil, false)
	testutil.Eventually(t, 10*time.Second, "the demo catalog after the restart", func() bool {
		_, ok := h.devs.Snapshot().Get("porch_light.set")
		return ok
	})
	w := h.watch("zigbee2mqtt/porch_light/set")
	for _, v := range []bool{false, true} {
		if err := h.sim.Trigger(ctx, "hall_motion", map[string]any{"occupancy": v}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "the motion report", func() bool {
			l, _ := h.devs.Live("hall_motion.occupancy")
			return l.Value == v
		})
	}
	testutil.Eventually(t, 10*time.Second, "the porch light's command", func() bool {
		return slices.Contains(w.topicsSince(0), "zigbee2mqtt/porch_light/set")
	})
	testutil.Eventually(t, 10*time.Second, "a successful firing", func() bool {
		runs := h.firings("porch-on-motion")
		return len(runs) > 0 && runs[0].OK
	})
}

// TestSelectorHeldWindowSurvivesRestart: a held trigger by selector keeps
// its open window per state across a restart: the door still open when
// the rule is armed again fires once, saying the window held.
func TestSelectorHeldWindowSurvivesRestart(t *testing.T) {
	h := newHouse(t, Config{})
	cmds := h.watch("zigbee2mqtt/hall_light/set")
	h.deploy(`{"name":"hall-door-open","triggers":[{"id":"open","state":{"area":"hall","property":"contact"},"to":false,"for":"1500ms"}],
	 "steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)
	if err := h.sim.Trigger(context.Background(), "front_door", map[string]any{"contact": false}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the persisted window", func() bool {
		p, err := h.store.ListPending(context.Background(), "hall-door-open")
		return err == nil && len(p) == 1 && p[0].ID == "hall-door-open/open@front_door.contact"
	})
	h.stop()
	h.start()
	testutil.Eventually(t, 10*time.Second, "the command after the restart", func() bool { return cmds.count() > 0 })
	testutil.Eventually(t, 10*time.Second, "the firing's record", func() bool {
		runs := h.firings("hall-door-open")
		return len(runs) == 1 && strings.Contains(string(runs[0].Envelope), "front_door.contact changed to false before the restart and the window held")
	})
	testutil.Eventually(t, 5*time.Second, "the window row to go", func() bool {
		p, _ := h.store.ListPending(context.Background(), "hall-door-open")
		return len(p) == 0
	})
}

// TestOnChangeFindsTriggersByIDAndSelector: a state's change from a value
// fires both the rule naming the state and the rule whose selector
// reaches it; its first value (no previous one) never fires the one by
// selector, and fires the other only when the value recorded before the
// start differs (baseline.go).
func TestOnChangeFindsTriggersByIDAndSelector(t *testing.T) {
	h := newHouse(t, Config{})
	h.deploy(`{"name":"by-id","mode":"parallel","triggers":[{"id":"m","state":"hall_motion.occupancy"}],
	 "steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)
	h.deploy(`{"name":"by-selector","mode":"parallel","triggers":[{"id":"m","state":{"area":"hall","property":"occupancy"}}],
	 "steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)
	const id = "hall_motion.occupancy"
	s := h.eng.sched
	for _, tc := range []struct {
		name        string
		baseline    []any // recorded before the start, for a first value: value, recorded
		prev        any
		byID, bySel int // firings the change adds
		because     string
	}{
		{"a change from a value", nil, false, 1, 1, id + " changed from false to true"},
		{"a first value recorded otherwise", []any{false, true}, nil, 1, 0,
			id + " changed from false (its value before the restart) to true"},
		{"a first value recorded the same", []any{true, true}, nil, 0, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			byID, bySel := len(h.firings("by-id")), len(h.firings("by-selector"))
			if tc.baseline != nil {
				s.SetBaseline(id, tc.baseline[0], tc.baseline[1].(bool))
			}
			// A firing counts as running from fire on, until its
			// record is queued and its command acknowledged; h.firings
			// then waits for the records.
			s.OnChange(devices.Change{Kind: devices.ChangeState, ID: id, Value: true, Prev: tc.prev, Time: time.Now()})
			testutil.Eventually(t, 10*time.Second, "the firings to end", func() bool {
				for _, name := range []string{"by-id", "by-selector"} {
					if s.Rule(name).InProgress() > 0 {
						return false
					}
				}
				return true
			})
			runsID, runsSel := h.firings("by-id"), h.firings("by-selector")
			if got := len(runsID) - byID; got != tc.byID {
				t.Errorf("the rule naming the state fired %d times, want %d", got, tc.byID)
			}
			if got := len(runsSel) - bySel; got != tc.bySel {
				t.Errorf("the rule by selector fired %d times, want %d", got, tc.bySel)
			}
			if tc.because != "" && (len(runsID) == 0 || !strings.Contains(string(runsID[0].Envelope), tc.because)) {
				t.Errorf("the firing does not say %q", tc.because)
			}
		})
	}
}
