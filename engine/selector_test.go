package engine

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

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
