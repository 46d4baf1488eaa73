package engine

import (
	"context"
	"slices"
	"testing"
	"time"
)

// TestRuleMissingEntries: a rule whose device leaves the catalog says so
// at once (before any firing marks it broken), in GetRule and ListRules,
// and says nothing once the catalog holds every entry it references.
func TestRuleMissingEntries(t *testing.T) {
	h := newHouse(t, Config{})
	h.deploy(motionLight)
	ctx := context.Background()
	ri, err := h.eng.GetRule(ctx, "hall-motion-light", 0)
	if err != nil || len(ri.Missing) != 0 || ri.Status != "enabled" {
		t.Fatalf("with every device: %q missing %v (%v)", ri.Status, ri.Missing, err)
	}
	if err := h.sim.Remove("hall_light"); err != nil {
		t.Fatal(err)
	}
	h.waitFor(5*time.Second, "removal", func() bool { _, ok := h.devs.Snapshot().Get("hall_light.set"); return !ok })
	ri, err = h.eng.GetRule(ctx, "hall-motion-light", 0)
	if err != nil || !slices.Equal(ri.Missing, []string{"hall_light.set"}) {
		t.Fatalf("after the light left: missing %v (%v)", ri.Missing, err)
	}
	list, err := h.eng.ListRules(ctx, 0)
	if err != nil || len(list) != 1 || !slices.Equal(list[0].Missing, []string{"hall_light.set"}) {
		t.Fatalf("listing: %+v (%v)", list, err)
	}
	// Reading the rule has no side effect: it is not recorded broken.
	if r, err := h.store.GetRule(ctx, "hall-motion-light"); err != nil || r.Broken != "" {
		t.Fatalf("stored rule after a read: broken %q (%v)", r.Broken, err)
	}
}
