package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/sim"

	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
)

// progGen writes random small valid programs as JSON, so the property test
// goes through the real decoder, validator and plan.
type progGen struct {
	r     *rand.Rand
	n     int
	trigs []string
	waits []string
}

func (g *progGen) id(prefix string) string {
	g.n++
	return fmt.Sprintf("%s%d", prefix, g.n)
}

var propConds = []string{"true", "false", "state('hall_motion.illuminance') < 30", "hour(now()) >= 21", "state('hall_light.state') == 'ON'"}

func (g *progGen) cond(inLoop bool) string {
	c := propConds[g.r.IntN(len(propConds))]
	if inLoop && g.r.IntN(3) == 0 {
		c = "vars.index % 2 == 0"
	}
	if g.r.IntN(4) == 0 && len(g.trigs) > 0 {
		c = fmt.Sprintf("trigger.id == '%s'", g.trigs[g.r.IntN(len(g.trigs))])
	}
	return c
}

func (g *progGen) steps(depth int, inLoop bool) []any {
	n := 1 + g.r.IntN(3)
	out := make([]any, 0, n)
	for range n {
		out = append(out, g.step(depth, inLoop))
	}
	return out
}

func (g *progGen) step(depth int, inLoop bool) map[string]any {
	k := g.r.IntN(12)
	if depth >= 3 && k >= 6 {
		k = g.r.IntN(6)
	}
	switch k {
	case 0, 1:
		return map[string]any{"id": g.id("call"), "call": "porch_light.set", "args": map[string]any{"state": "TOGGLE"}}
	case 2:
		if g.r.IntN(2) == 0 {
			return map[string]any{"id": g.id("flash"), "call": "script.flash", "args": map[string]any{"times": g.r.IntN(3)}}
		}
		return map[string]any{"id": g.id("light"), "call": "hall_light.set", "args": map[string]any{"state": "ON", "brightness": g.r.IntN(255)}}
	case 3:
		return map[string]any{"id": g.id("delay"), "delay": []string{"0s", "500ms", "2m", "1h"}[g.r.IntN(4)]}
	case 4:
		id := g.id("wait")
		g.waits = append(g.waits, id)
		s := map[string]any{"id": id, "wait": map[string]any{"state": "hall_motion.occupancy", "to": false, "for": "1m"}, "timeout": "30m"}
		if g.r.IntN(2) == 0 {
			s["continue_on_timeout"] = true
		}
		return s
	case 5:
		v := any(g.r.IntN(10))
		switch g.r.IntN(6) {
		case 0:
			v = "{{ int('not a number') }}" // fails at run time
		case 1:
			v = "{{ trigger.id }}"
		}
		s := map[string]any{"id": g.id("set"), "set": map[string]any{"x": v}}
		if g.r.IntN(15) == 0 {
			return map[string]any{"id": g.id("stop"), "stop": "enough", "error": g.r.IntN(2) == 0}
		}
		return s
	case 6, 7:
		s := map[string]any{"id": g.id("if"), "if": g.cond(inLoop), "then": g.steps(depth+1, inLoop)}
		if g.r.IntN(2) == 0 {
			s["else"] = g.steps(depth+1, inLoop)
		}
		return s
	case 8, 9:
		id := g.id("choose")
		var arms []any
		for i := range 1 + g.r.IntN(3) {
			arm := map[string]any{"when": g.cond(inLoop), "do": g.steps(depth+1, inLoop)}
			if g.r.IntN(2) == 0 {
				arm["label"] = fmt.Sprintf("a%d", i)
			}
			arms = append(arms, arm)
		}
		s := map[string]any{"id": id, "choose": arms}
		if g.r.IntN(2) == 0 {
			s["default"] = g.steps(depth+1, inLoop)
		}
		return s
	}
	var rep map[string]any
	switch g.r.IntN(4) {
	case 0:
		rep = map[string]any{"count": g.r.IntN(4)}
	case 1:
		rep = map[string]any{"while": g.cond(false), "max": 1 + g.r.IntN(4)}
	case 2:
		rep = map[string]any{"until": g.cond(false), "max": 1 + g.r.IntN(4)}
	default:
		items := make([]any, g.r.IntN(4))
		for i := range items {
			items[i] = fmt.Sprintf("room%d", i)
		}
		rep = map[string]any{"for_each": items}
	}
	return map[string]any{"id": g.id("loop"), "repeat": rep, "do": g.steps(depth+1, true)}
}

func (g *progGen) program() map[string]any {
	var trigs []any
	for range 1 + g.r.IntN(3) {
		id := g.id("t")
		g.trigs = append(g.trigs, id)
		switch g.r.IntN(5) {
		case 0:
			trigs = append(trigs, map[string]any{"id": id, "state": "hall_motion.occupancy", "to": true})
		case 1:
			trigs = append(trigs, map[string]any{"id": id, "state": "hall_motion.occupancy", "to": true, "for": "2m"})
		case 2:
			trigs = append(trigs, map[string]any{"id": id, "event": "bedroom_remote.action", "value": []any{"on", "toggle"}})
		case 3:
			trigs = append(trigs, map[string]any{"id": id, "cron": "0 30 * * * *"})
		default:
			trigs = append(trigs, map[string]any{"id": id, "event": "bedroom_remote.action", "value": "on"})
		}
	}
	p := map[string]any{"name": "random", "triggers": trigs, "steps": g.steps(1, false)}
	if conds := g.conditions(); len(conds) > 0 {
		p["conditions"] = conds
	}
	if g.r.IntN(4) == 0 {
		p["throttle"] = "1h"
	}
	return p
}

func (g *progGen) conditions() []any {
	var conds []any
	for range g.r.IntN(3) {
		if g.r.IntN(4) == 0 {
			conds = append(conds, map[string]any{"id": g.id("cond"), "time": map[string]any{"after": "22:00", "before": "06:00"}})
			continue
		}
		c := propConds[g.r.IntN(len(propConds))]
		if g.r.IntN(3) > 0 {
			c = "true"
		}
		conds = append(conds, map[string]any{"id": g.id("cond"), "expr": c})
	}
	return conds
}

func (g *progGen) scenario() traceScenarioFile {
	sc := map[string]any{"trigger": g.trigs[g.r.IntN(len(g.trigs))]}
	if g.r.IntN(2) == 0 {
		sc["state"] = map[string]any{"hall_motion.illuminance": float64(g.r.IntN(60))}
	}
	if g.r.IntN(2) == 0 {
		sc["now"] = fmt.Sprintf("2026-01-15T%02d:30:00Z", g.r.IntN(24))
	}
	waits := map[string]any{}
	for _, w := range g.waits {
		if g.r.IntN(2) == 0 {
			waits[w] = []string{sim.WaitMet, sim.WaitTimeout}[g.r.IntN(2)]
		}
	}
	if len(waits) > 0 {
		sc["waits"] = waits
	}
	var timeline []any
	for i := range g.r.IntN(4) {
		at := fmt.Sprintf("%ds", 30*i+g.r.IntN(200))
		timeline = append(timeline, map[string]any{"at": at, "state": map[string]any{"hall_motion.occupancy": g.r.IntN(2) == 0}})
	}
	if len(timeline) > 0 {
		sc["timeline"] = timeline
	}
	if g.r.IntN(4) == 0 {
		sc["last_run"] = "-10m"
	}
	var sf traceScenarioFile
	sf.Input = map[string]any{"scenario": sc}
	switch g.r.IntN(5) {
	case 0:
		sf.Limits.MaxSteps = 3 + g.r.IntN(20)
	case 1:
		sf.Limits.MaxIterations = 1 + g.r.IntN(2)
	case 2:
		sf.Limits.MaxWall = "90m"
	}
	return sf
}

// TestTraceCorrespondenceProperty runs random valid programs under random
// scenarios and bounds: every trace must correspond to the Validate plan
// (spec §5.8.4), whatever the outcome.
func TestTraceCorrespondenceProperty(t *testing.T) {
	cat := newTraceCatalog()
	autos := traceAutomations(t, cat)
	n := 400
	if testing.Short() {
		n = 50
	}
	statuses := map[string]int{}
	for seed := range uint64(n) {
		g := &progGen{r: rand.New(rand.NewPCG(seed, 7))}
		raw, err := json.Marshal(g.program())
		if err != nil {
			t.Fatal(err)
		}
		res, err := Validate(raw, cat, ValidateOptions{Cache: itCache, Automation: func(id string) (*Compiled, bool) { c, ok := autos[id]; return c, ok }})
		if err != nil || !res.Valid {
			t.Fatalf("seed %d: generated program is invalid: %v %+v\n%s", seed, err, res.Diagnostics, raw)
		}
		for range 3 {
			sf := g.scenario()
			rr, _ := traceTestRun(t, res.Compiled, autos, sf)
			statuses[rr.Outcome.Status]++
			ok := t.Run("", func(t *testing.T) { itCheckResult(t, res.Plan, rr) })
			if !ok {
				t.Fatalf("seed %d scenario %+v limits %+v\nprogram %s\ntrace %q\noutcome %+v", seed, sf.Input, sf.Limits, raw, itIDs(rr.Steps), rr.Outcome)
			}
		}
	}
	for _, s := range []string{StatusSuccess, StatusFailed, StatusTimeout, StatusLimitExceeded, StatusConditionsNotMet,
		StatusNotTriggered, core.StatusAssumed, StatusThrottled} {
		if statuses[s] == 0 && !testing.Short() {
			t.Errorf("no run ended with %s: the generator misses a path (%v)", s, statuses)
		}
	}
	t.Logf("outcomes: %v", statuses)
}

// FuzzTraceCorrespondence explores generator seeds beyond the fixed ones:
// go test ./rules -run=^$ -fuzz=FuzzTraceCorrespondence -fuzztime=30s
func FuzzTraceCorrespondence(f *testing.F) {
	for _, s := range []uint64{1, 2, 3, 42} {
		f.Add(s, s+1)
	}
	cat := newTraceCatalog()
	autos := traceAutomations(f, cat)
	f.Fuzz(func(t *testing.T, seed, scen uint64) {
		g := &progGen{r: rand.New(rand.NewPCG(seed, 7))}
		raw, _ := json.Marshal(g.program())
		res, err := Validate(raw, cat, ValidateOptions{Cache: itCache, Automation: func(id string) (*Compiled, bool) { c, ok := autos[id]; return c, ok }})
		if err != nil || !res.Valid {
			t.Fatalf("generated program is invalid: %v %+v\n%s", err, res.Diagnostics, raw)
		}
		g.r = rand.New(rand.NewPCG(scen, 11))
		rr, _ := traceTestRun(t, res.Compiled, autos, g.scenario())
		itCheckResult(t, res.Plan, rr)
	})
}
