package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestAvailableSelectorWindowSurvivesRestart: a held available trigger
// by selector keeps its open window per device across a restart: the
// sensor still offline when the rule is armed again fires once, saying
// the window held.
func TestAvailableSelectorWindowSurvivesRestart(t *testing.T) {
	h := newHouse(t, Config{})
	cmds := h.watch("zigbee2mqtt/hall_light/set")
	h.deploy(`{"name":"hall-gone","triggers":[{"id":"gone","available":{"area":"hall","property":"occupancy"},"to":false,"for":"1500ms"}],
	 "steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)
	testutil.Eventually(t, 5*time.Second, "hall_motion online", func() bool {
		l, _ := h.devs.Live("hall_motion.occupancy")
		return l.Available != nil && *l.Available
	})
	if err := h.client.Publish(context.Background(), "zigbee2mqtt/hall_motion/availability", []byte(`{"state":"offline"}`), 1, true); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the persisted window", func() bool {
		p, err := h.store.ListPending(context.Background(), "hall-gone")
		return err == nil && len(p) == 1 && p[0].ID == "hall-gone/gone@hall_motion.occupancy"
	})
	h.stop()
	h.start()
	testutil.Eventually(t, 10*time.Second, "the command after the restart", func() bool { return cmds.count() > 0 })
	testutil.Eventually(t, 10*time.Second, "the firing's record", func() bool {
		runs := h.firings("hall-gone")
		return len(runs) == 1 && strings.Contains(string(runs[0].Envelope), "hall_motion.occupancy's device went offline before the restart and the window held")
	})
	testutil.Eventually(t, 5*time.Second, "the window row to go", func() bool {
		p, _ := h.store.ListPending(context.Background(), "hall-gone")
		return len(p) == 0
	})
}
