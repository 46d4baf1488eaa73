package engine

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/bounds"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// burnRule is the attacker's rule: read risk (installed without
// approval), parallel, a 1000×1000 repeat of an expression of ~38 ms
// that stays under MaxEvalOps. One firing used to burn ~6 minutes of CPU.
const burnRule = `{"name":"burn","mode":"parallel","max":300,
  "triggers":[{"id":"press","event":"bedroom_remote.action"}],
  "steps":[{"id":"r","repeat":{"count":1000},"do":[{"id":"q","repeat":{"count":1000},"do":[
    {"id":"d","set":{"v":"{{ len(filter(1..50000, # % 7 == 0)) }}"}}]}]}]}`

// TestBurnFiringEndsAtMaxRunOps: with the default limits, the burn
// rule's firing ends limit_exceeded naming MaxRunOps within seconds, and
// its test run predicts it (it used to end timeout at MaxTestRunWall).
func TestBurnFiringEndsAtMaxRunOps(t *testing.T) {
	// A firing takes about a second of CPU; the bound leaves ten times
	// that. The race detector slows evaluation about 13 times: there the
	// budget is a fifth (the same bound, faster) and the bounds are
	// longer (the test run would meet MaxTestRunWall first).
	lim := rules.DefaultLimits
	bound := 15 * time.Second
	if raceEnabled {
		lim.MaxRunOps /= 5
		bound *= 6
		lim.MaxTestRunWall = bound
	}
	h := newHouse(t, Config{Limits: lim})
	tr := h.execute(ExecuteRequest{Program: json.RawMessage(burnRule), TestRun: true})
	if o := tr.Outcome; o.Status != rules.StatusLimitExceeded || !strings.Contains(o.Error, "(MaxRunOps)") {
		t.Fatalf("test run: %+v, want limit_exceeded naming MaxRunOps", o)
	}
	h.deploy(burnRule)
	if err := h.sim.Press(t.Context(), "on"); err != nil {
		t.Fatal(err)
	}
	var run storage.Run
	testutil.Eventually(t, bound+10*time.Second, "the burn firing's end", func() bool {
		runs := h.firings("burn")
		if len(runs) == 0 || runs[0].Status == rules.StatusRunning {
			return false
		}
		run = runs[0]
		return true
	})
	if run.Status != rules.StatusLimitExceeded || !strings.Contains(string(run.Envelope), "(MaxRunOps)") {
		t.Fatalf("firing %s: %.300s", run.Status, run.Envelope)
	}
	if took := run.Ended.Sub(run.Started); took > bound {
		t.Errorf("the firing ran %v", took)
	}
	t.Logf("test run: %s; firing %s in %v", tr.Outcome.Error, run.Status, run.Ended.Sub(run.Started))
}

// TestRuleFiringsShareTheirOperations: many firings of the burn rule at
// once (parallel) share one MaxRunOps, refilled over bounds.ShareRefill: the
// first takes it, the others end at once saying the rule's share is used
// up, instead of each burning its own MaxRunOps (the recheck's 300
// firings took the house's cores for minutes).
func TestRuleFiringsShareTheirOperations(t *testing.T) {
	lim := rules.DefaultLimits
	lim.MaxRunOps = 200_000
	h := newHouse(t, Config{Limits: lim})
	h.deploy(burnRule)
	const presses = 12
	for range presses {
		if err := h.sim.Press(t.Context(), "on"); err != nil {
			t.Fatal(err)
		}
	}
	var runs []storage.Run
	testutil.Eventually(t, 60*time.Second, "every burn firing ended", func() bool {
		runs = h.firings("burn")
		for _, r := range runs {
			if r.Status == rules.StatusRunning {
				return false
			}
		}
		return len(runs) == presses
	})
	shared := 0
	for _, r := range runs {
		if r.Status != rules.StatusLimitExceeded {
			t.Fatalf("a burn firing %s: %.300s", r.Status, r.Envelope)
		}
		if strings.Contains(string(r.Envelope), "the others had used all but") {
			shared++
		}
	}
	if shared < presses-3 {
		t.Fatalf("%d of %d firings were cut by the rule's share, want nearly all but the first", shared, presses)
	}
}

// TestPrincipalsRulesShareTheirOperations: many heavy rules of one
// principal share bounds.PrincipalShares × MaxRunOps: with six burn rules fired
// at once, at most four get a whole MaxRunOps, the others are cut by the
// principal's share (one rule each would otherwise add up to the cores).
func TestPrincipalsRulesShareTheirOperations(t *testing.T) {
	lim := rules.DefaultLimits
	lim.MaxRunOps = 200_000
	h := newHouse(t, Config{Limits: lim})
	const n = 6
	for i := range n {
		h.deploy(strings.Replace(burnRule, `"name":"burn"`, fmt.Sprintf(`"name":"burn%d"`, i), 1))
	}
	if err := h.sim.Press(t.Context(), "on"); err != nil {
		t.Fatal(err)
	}
	cut := 0
	testutil.Eventually(t, 60*time.Second, "every burn rule's firing ended", func() bool {
		cut = 0
		for i := range n {
			runs := h.firings(fmt.Sprintf("burn%d", i))
			if len(runs) != 1 || runs[0].Status == rules.StatusRunning {
				return false
			}
			if strings.Contains(string(runs[0].Envelope), "the others had used all but") {
				cut++
			}
		}
		return true
	})
	if cut < n-bounds.PrincipalShares {
		t.Fatalf("%d of %d rules' firings were cut by the principal's share, want at least %d", cut, n, n-bounds.PrincipalShares)
	}
}
