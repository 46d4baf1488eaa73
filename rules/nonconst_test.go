package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"

	"strings"
	"testing"
)

// TestNonConstantReadsRefused: every catalog read must be state('<string
// constant>') called directly, so the plan and the references list every
// entry a program can read. $env.state('…') and `let s = state; s('…')`
// passed the constant-reference check and stayed out of both. Any other use
// of state (an alias, a value passed on, a computed callee or id) and any
// use of $env is refused at validate, located inside the string.
func TestNonConstantReadsRefused(t *testing.T) {
	tests := []struct{ expr, at string }{
		{"$env.state('hall_motion.occupancy')", "$env"},
		{"let s = state; s('hall_motion.occupancy')", "state"},
		{"let f = true ? state : state; f('hall_motion.occupancy')", "state"},
		{"get({f: state}, 'f')", "state"},
		{"get($env, 'state')", "$env"},
		{"$env['vars']", "$env"},
		{"len($env)", "$env"},
		{"map(['hall_motion.occupancy'], state(#))", "#"},
		{"state('hall_' + 'motion.occupancy')", "'hall_'"},
		{"state(trigger.id)", "trigger.id"},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			src := prog(`[{"id":"x","if":"` + tt.expr + ` != nil","then":[{"id":"y","stop":""}]}]`)
			res, err := Validate([]byte(src), demoCatalog(), ValidateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.Valid {
				t.Fatalf("validated; references %v", res.Compiled.Refs)
			}
			col, found := strings.Index(tt.expr, tt.at)+1, false
			for _, d := range res.Diagnostics {
				if d.Code == core.CodeBadExpression {
					t.Fatalf("does not compile: %s", d.Message)
				}
				if d.Code != core.CodeNonConstantRef || d.Path != "/steps/0/if" || d.Range == nil {
					t.Errorf("diagnostic %+v", d)
					continue
				}
				found = found || d.Range.Start.Column == col
			}
			if !found {
				t.Errorf("no non_constant_reference at column %d (%q) in %+v", col, tt.at, res.Diagnostics)
			}
		})
	}
	ok := prog(`[{"id":"x","if":"state('hall_motion.occupancy') == true && vars == nil","then":[{"id":"y","stop":""}]}]`)
	if res, _ := Validate([]byte(ok), demoCatalog(), ValidateOptions{}); !res.Valid {
		t.Errorf("a constant read is refused: %+v", res.Diagnostics)
	}
}
