package engine

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

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
    {"id":"d","set":{"v":"{{ len(filter(1..130000, # % 7 == 0)) }}"}}]}]}]}`

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
