package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
)

// footprintRule is a typical installed rule: a state trigger and a call
// whose argument is templated.
func footprintRule(i int) string {
	states := []string{"hall_motion.occupancy", "hall_motion.illuminance", "living_plug.power", "outdoor_weather.temperature"}
	return fmt.Sprintf(`{"name":"footprint-%d","mode":"parallel","max":10,
"triggers":[{"id":"t","state":%q}],
"steps":[{"id":"cmd","call":"hall_light.set","args":{"brightness":"{{ trigger.value }}"}}]}`, i, states[i%len(states)])
}

// TestInstalledRuleFootprint pins what an installed rule keeps on the heap:
// every collection marks all of it, so a house with thousands of rules
// stalls event dispatch for as long. It was 39 objects and 4.1 KB per
// rule (pilothouse bench --rules 10000), then 13 objects and 2.45 KB; it
// is 12 objects and ~1.83 KB (~1.97 KB under -race) since Compiled.Entries
// is a slice and steps and triggers keep the fields of rare kinds behind a
// pointer. The bounds leave room for the map growth a house of this size
// amortizes and for what background work allocates meanwhile on a loaded
// machine (runs vary by about 100 bytes and up to 1.2 objects).
func TestInstalledRuleFootprint(t *testing.T) {
	if testing.Short() {
		t.Skip("installs hundreds of rules")
	}
	h := newHouse(t, Config{})
	const warm, n = 20, 400
	for i := 0; i < warm; i++ {
		h.deploy(footprintRule(i))
	}
	var m0, m1 runtime.MemStats
	// The deploys' logbook entries wait for their write: not the rules'.
	h.eng.FlushLogbook()
	runtime.GC()
	runtime.ReadMemStats(&m0)
	for i := warm; i < warm+n; i++ {
		resp := h.execute(ExecuteRequest{Program: json.RawMessage(footprintRule(i)), TraceLevel: "none", Store: new(bool)})
		if !resp.Outcome.OK {
			t.Fatalf("deploy %d: %+v", i, resp.Outcome)
		}
	}
	h.eng.FlushLogbook()
	runtime.GC()
	runtime.ReadMemStats(&m1)
	objects := float64(int64(m1.HeapObjects)-int64(m0.HeapObjects)) / n
	bytes := float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / n
	t.Logf("per installed rule: %.1f heap objects, %.0f bytes", objects, bytes)
	maxBytes := 2100.0
	if raceEnabled {
		maxBytes = 2300 // the race detector's allocations are larger
	}
	if objects > 14 {
		t.Errorf("an installed rule keeps %.1f heap objects, want at most 14", objects)
	}
	if bytes > maxBytes {
		t.Errorf("an installed rule keeps %.0f heap bytes, want at most %.0f", bytes, maxBytes)
	}
}

// TestHeldPlanIsStoredPlan: a rule's plan, derived again from its held
// body, is the plan stored when it was promoted, before and after a
// restart.
func TestHeldPlanIsStoredPlan(t *testing.T) {
	h := newHouse(t, Config{})
	ctx := context.Background()
	progs := []string{motionLight, footprintRule(1), `{"name":"evening","triggers":[{"id":"dusk","at":"19:30"}],
"conditions":[{"id":"dark","expr":"state('hall_motion.illuminance') < 30"}],
"steps":[{"id":"check","if":"state('front_door.contact') == false","then":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}}],
"else":[{"id":"wait","delay":"5m"},{"id":"stop","stop":"door open"}]}]}`}
	var names []string
	for _, src := range progs {
		names = append(names, h.deploy(src).Output.(*pilotage.DeployOutput).Rule)
	}
	check := func(when string) {
		for _, name := range names {
			ri, err := h.eng.GetRule(ctx, name, 0)
			if err != nil || ri.Plan == nil {
				t.Fatalf("%s: rule %s: %+v %v", when, name, ri, err)
			}
			pr, err := h.store.GetProgram(ctx, ri.ProgramRef)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := json.Marshal(ri.Plan)
			if string(got) != string(pilotage.CanonicalJSON(pr.Plan)) && string(got) != string(pr.Plan) {
				t.Errorf("%s: rule %s plans\n%s\nstored\n%s", when, name, got, pr.Plan)
			}
		}
	}
	check("after deploy")
	h.stop()
	h.start()
	check("after restart")
}

// TestPromotedBodyBaseline: a deployed body holds the baseline of the
// entries it was validated against: none drifted on the catalog it was
// deployed on, the first one when the catalog loses them.
func TestPromotedBodyBaseline(t *testing.T) {
	h := newHouse(t, Config{})
	ref := h.deploy(motionLight).Output.(*pilotage.DeployOutput).ProgramRef
	b := h.eng.bodies.Get(ref)
	if id, gone := b.Drift(h.eng.cat.View(h.eng.principal(context.Background())).Get); id != "" {
		t.Fatalf("drift on the catalog it was deployed on: %q (gone %v)", id, gone)
	}
	none := func(string) (*pilotage.Entry, bool) { return nil, false }
	if id, gone := b.Drift(none); id != "hall_light.set" || !gone {
		t.Fatalf("drift on an empty catalog: %q (gone %v), want hall_light.set", id, gone)
	}
}
