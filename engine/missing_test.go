package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
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
	present := func() bool { _, ok := h.devs.Snapshot().Get("hall_light.set"); return ok }
	if err := h.sim.Rename("hall_light", "hall_lamp"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(h.t, 5*time.Second, "the light renamed", func() bool { return !present() })
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
	// A firing marks it broken; once the light is back under its name,
	// the rule says it can fire again (as its next firing will find),
	// without waiting for that firing.
	_ = h.sim.Trigger(ctx, "hall_motion", map[string]any{"occupancy": true})
	testutil.Eventually(h.t, 5*time.Second, "the broken firing", func() bool { return len(h.firings("hall-motion-light")) > 0 })
	if ri, _ = h.eng.GetRule(ctx, "hall-motion-light", 0); ri.Status != "broken" || ri.NextFire != nil {
		t.Fatalf("after a broken firing: %q %q next %v", ri.Status, ri.Broken, ri.NextFire)
	}
	if err := h.sim.Rename("hall_lamp", "hall_light"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(h.t, 5*time.Second, "the light back", present)
	if ri, _ = h.eng.GetRule(ctx, "hall-motion-light", 0); ri.Status != "enabled" || ri.Broken != "" || len(ri.Missing) != 0 {
		t.Fatalf("with the light back: %q %q missing %v", ri.Status, ri.Broken, ri.Missing)
	}
	if _, err := h.eng.SetRuleEnabled(ctx, "hall-motion-light", false); err != nil {
		t.Fatal(err)
	}
	if ri, _ = h.eng.GetRule(ctx, "hall-motion-light", 0); ri.Status != "disabled" || ri.NextFire != nil {
		t.Fatalf("disabled: %q next %v", ri.Status, ri.NextFire)
	}
}
