package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
)

// A set step stores a copy of its value: an expression may return one of
// the run's own live maps (vars, steps, $env), and a variable holding the
// map it lives in would make every later encoding of the run recurse
// forever (a stack overflow kills the process; recover cannot catch it).
// The copies are bounded: a value nested too deep, or a run storing too
// many JSON values through set, ends limit_exceeded with the partial trace.
func TestSetStoresBoundedCopies(t *testing.T) {
	cases := []struct {
		name   string
		steps  []*model.Step
		status string
		msg    string
		check  func(t *testing.T, res *RunResult)
	}{
		{
			name:   "vars into itself",
			steps:  []*model.Step{itSet("a", "n", 1), itSet("b", "snap", itTpl("vars")), itSet("c", "n", 2)},
			status: StatusSuccess,
			check: func(t *testing.T, res *RunResult) {
				snap := res.Steps[len(res.Steps)-2].Output.(map[string]any)["snap"].(map[string]any)
				if snap["n"] != 1 || len(snap) != 1 {
					t.Errorf("snap = %v, want the vars of that moment {n: 1}", snap)
				}
			},
		},
		{
			name:   "steps and env into vars",
			steps:  []*model.Step{itSet("a", "s", itTpl("steps")), itSet("b", "e", itTpl("$env")), itSet("c", "s2", itTpl("steps"))},
			status: StatusSuccess,
		},
		{
			name:   "nesting grows each iteration",
			steps:  []*model.Step{itSet("a", "x", 0), itCount("loop", 200, itSet("b", "x", itTpl("vars")))},
			status: StatusLimitExceeded,
			msg:    "nested",
		},
		{
			name:   "doubling value",
			steps:  []*model.Step{itSet("a", "x", 0), itCount("loop", 200, itSet("b", "x", itTpl("[vars, vars]")))},
			status: StatusLimitExceeded,
			msg:    "JSON values",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := itProgram(nil, nil, tc.steps...)
			res := itRun(t, c, itSim(nil, Scenario{}), RunInput{})
			if res.Outcome.Status != tc.status || !strings.Contains(res.Outcome.Error, tc.msg) {
				t.Fatalf("outcome %+v, want %s containing %q", res.Outcome, tc.status, tc.msg)
			}
			// Every trace and output must encode (no cycle, bounded).
			if _, err := pilotage.AppendJSON(nil, res.Steps); err != nil {
				t.Fatalf("trace does not encode: %v", err)
			}
			if tc.check != nil {
				tc.check(t, res)
			}
		})
	}
}
