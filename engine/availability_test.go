package engine

import (
	"context"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestNoFiringOnAnOfflineDevice: a device that says it is offline fires
// no state trigger (as its entities are "unavailable" in Home Assistant):
// going offline breaks an open "for" window, a state it sends meanwhile
// fires nothing and is counted, and once back online it fires again.
func TestNoFiringOnAnOfflineDevice(t *testing.T) {
	h := newHouse(t, Config{Approval: noApproval})
	ctx := context.Background()
	motion := func(on bool) {
		t.Helper()
		if err := h.sim.Trigger(ctx, "hall_motion", map[string]any{"occupancy": on}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "the motion state", func() bool {
			l, ok := h.devs.Live("hall_motion.occupancy")
			return ok && l.Value == on
		})
	}
	avail := func(state string) {
		t.Helper()
		if err := h.client.Publish(ctx, "zigbee2mqtt/hall_motion/availability", []byte(`{"state":"`+state+`"}`), 1, true); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "hall_motion "+state, func() bool {
			l, _ := h.devs.Live("hall_motion.occupancy")
			return l.Available != nil && *l.Available == (state == "online")
		})
	}
	motion(false)
	avail("online")
	h.deploy(`{"name":"held","triggers":[{"id":"m","state":"hall_motion.occupancy","to":true,"for":"3s"}],
	  "steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}}]}`)
	h.deploy(`{"name":"now","triggers":[{"id":"m","state":"hall_motion.occupancy","to":true}],
	  "steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)

	motion(true) // "now" fires; "held" opens its window
	testutil.Eventually(t, 10*time.Second, "the firing online", func() bool { return len(h.firings("now")) == 1 })
	avail("offline") // breaks the window
	motion(false)
	motion(true) // offline: fires nothing
	// Counted as the change reaches the scheduler, just after the catalog
	// shows it.
	testutil.Eventually(t, 10*time.Second, "2 offline changes counted", func() bool { return h.eng.OfflineChanges() == 2 })
	// A negative: wait past the window the offline device would have held.
	time.Sleep(4 * time.Second)
	if n, m := len(h.firings("held")), len(h.firings("now")); n != 0 || m != 1 {
		t.Fatalf("firings while offline: held %d, now %d (want 0 and 1)", n, m)
	}

	avail("online")
	motion(false)
	motion(true)
	testutil.Eventually(t, 10*time.Second, "the firings back online", func() bool {
		return len(h.firings("now")) == 2 && len(h.firings("held")) == 1
	})
}
