package rules

import (
	"context"
	"math/rand"
	"testing"
	"time"
)

// TestCookbookTestRunsCorrespond test-runs every guide program from every
// trigger under randomized scenarios (state values, clock, waits) and checks
// plan–trace correspondence (spec §5.8.4) on each trace.
func TestCookbookTestRunsCorrespond(t *testing.T) {
	cat := demoCatalog()
	rnd := rand.New(rand.NewSource(42))
	values := []any{true, false, 0.0, 5.0, 25.0, 1000.0, "ON", "OFF", "single", "LOCK", "open", nil}
	runs := 0
	for _, g := range Guides() {
		for i, src := range guidePrograms(g.Body) {
			res, err := Validate([]byte(src), cat, ValidateOptions{HasLocation: true})
			if err != nil || !res.Valid {
				t.Fatalf("%s/%d does not validate: %v %v", g.ID, i+1, err, res.Diagnostics)
			}
			c := res.Compiled
			for _, trig := range res.Program.Triggers {
				for k := 0; k < 8; k++ {
					state := map[string]any{}
					for _, id := range cat.IDs() {
						if rnd.Intn(3) == 0 {
							state[id] = values[rnd.Intn(len(values))]
						}
					}
					now := time.Date(2026, 1, 1+rnd.Intn(28), rnd.Intn(24), rnd.Intn(60), 0, 0, time.UTC)
					sc := Scenario{Trigger: trig.ID, State: state, Now: &now, Waits: map[string]string{}}
					for _, st := range allSteps(res.Program.Steps) {
						if st.Kind == StepWait && rnd.Intn(2) == 0 {
							sc.Waits[st.ID] = WaitTimeout
						}
					}
					w := NewSimWorld(func(string) (any, bool) { return nil, false }, now, sc, nil)
					w.SetPlace(Place{Zone: time.UTC, Location: &Location{Latitude: 51.48, Longitude: 0}})
					fire, err := FireFor(c, sc, w)
					if err != nil {
						t.Fatalf("%s/%d: %v", g.ID, i+1, err)
					}
					out := Run(context.Background(), c, w, RunInput{Trigger: fire, Limits: DefaultLimits})
					runs++
					if err := CheckCorrespondence(c.Plan, out.Steps, out.Outcome); err != nil {
						t.Errorf("%s/%d trigger %s: %v (outcome %+v)", g.ID, i+1, trig.ID, err, out.Outcome)
					}
				}
			}
		}
	}
	if runs < 100 {
		t.Fatalf("only %d runs", runs)
	}
	t.Logf("%d test runs checked", runs)
}

func allSteps(steps []*Step) []*Step {
	var out []*Step
	walkSteps(steps, func(s *Step) bool { out = append(out, s); return true })
	return out
}
