package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/interp"
	"github.com/pilothouse/pilothouse/rules/internal/model"
	"github.com/pilothouse/pilothouse/rules/internal/sim"

	"context"
	"encoding/json"
	"math/rand"
	"strings"
	"testing"
	"time"
)

// TestCookbookTestRunsCorrespond test-runs every guide program from every
// trigger under randomized scenarios (state values, clock, waits) and checks
// plan–trace correspondence (spec §5.8.4) on each trace. A program with
// catalog params is bound to the input its recipe gives, as execute
// binds it, and its runs call the bound devices.
func TestCookbookTestRunsCorrespond(t *testing.T) {
	cat := taggedCatalog() // the demo devices with their types, as catalog params need
	rnd := rand.New(rand.NewSource(42))
	values := []any{true, false, 0.0, 5.0, 25.0, 1000.0, "ON", "OFF", "single", "LOCK", "open", nil}
	runs := 0
	bound, boundCalls := 0, 0
	for _, g := range Guides() {
		for i, src := range guidePrograms(g.Body) {
			res, err := Validate([]byte(src), cat, ValidateOptions{HasLocation: true})
			if err != nil || !res.Valid {
				t.Fatalf("%s/%d does not validate: %v %v", g.ID, i+1, err, res.Diagnostics)
			}
			// A program with catalog params runs as execute runs it:
			// bound to the input its recipe's text gives.
			var params map[string]any
			if len(res.Compiled.RefParams()) > 0 {
				params = recipeInput(t, g.Body, src)
				res, err = Validate([]byte(src), cat, ValidateOptions{HasLocation: true, Bind: params})
				if err != nil || !res.Valid {
					t.Fatalf("%s/%d does not bind to %v: %v %v", g.ID, i+1, params, err, res.Diagnostics)
				}
				params = interp.WithParamDefaults(res.Program.Params, params)
				bound++
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
						if st.Kind == model.StepWait && rnd.Intn(2) == 0 {
							sc.Waits[st.ID] = sim.WaitTimeout
						}
					}
					w := NewSimWorld(func(string) (any, bool) { return nil, false }, now, sc, nil)
					w.SetPlace(Place{Zone: time.UTC, Location: &Location{Latitude: 51.48, Longitude: 0}})
					fire, err := FireFor(c, sc, w)
					if err != nil {
						t.Fatalf("%s/%d: %v", g.ID, i+1, err)
					}
					out := Run(context.Background(), c, w, RunInput{Trigger: fire, Params: params, Limits: DefaultLimits})
					runs++
					if err := CheckCorrespondence(c.Plan, out.Steps, out.Outcome); err != nil {
						t.Errorf("%s/%d trigger %s: %v (outcome %+v)", g.ID, i+1, trig.ID, err, out.Outcome)
					}
					if params != nil && len(w.Calls()) > 0 {
						boundCalls++
						for _, call := range w.Calls() {
							if _, ok := cat.Get(call.ID); !ok {
								t.Errorf("%s/%d: a bound run called %q", g.ID, i+1, call.ID)
							}
						}
					}
				}
			}
		}
	}
	if runs < 100 || bound == 0 || boundCalls == 0 {
		t.Fatalf("only %d runs; %d programs bound to catalog params, %d of their runs called anything", runs, bound, boundCalls)
	}
	t.Logf("%d test runs checked", runs)
}

// recipeInput is the execute params the recipe's section gives (its
// first "input": {...}, the scenario left out). An automation named there
// that this catalog lacks (the cookbook deploys flash-porch first) is
// replaced by the catalog's callable automation.
func recipeInput(t *testing.T, body, src string) map[string]any {
	t.Helper()
	at := strings.Index(body, src)
	head := strings.LastIndex(body[:at], "\n## ")
	sec := body[head+1:]
	if next := strings.Index(sec, "\n## "); next >= 0 {
		sec = sec[:next]
	}
	i := strings.Index(sec, `"input": {`)
	var in map[string]any
	if i < 0 || json.NewDecoder(strings.NewReader(sec[i+len(`"input": `):])).Decode(&in) != nil {
		t.Fatalf("the section of a program with catalog params gives no \"input\": {...}: %.80s", src)
	}
	delete(in, "scenario")
	for k, v := range in {
		if s, ok := v.(string); ok && strings.HasPrefix(s, "automation.") {
			in[k] = "script.flash_porch"
		}
	}
	return in
}

func allSteps(steps []*model.Step) []*model.Step {
	var out []*model.Step
	model.WalkSteps(steps, func(s *model.Step) bool { out = append(out, s); return true })
	return out
}
