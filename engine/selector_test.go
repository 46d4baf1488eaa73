package engine

import (
	"context"
	"slices"
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
