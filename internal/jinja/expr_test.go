package jinja

import "testing"

// TestExpressions: names, attributes, items, slices, literals, calls,
// filters and tests.
func TestExpressions(t *testing.T) {
	runCases(t, []renderCase{
		{"{{ value_json.a.b }} {{ value_json['a']['b'] }} {{ value_json.l.1 }}", `{"a":{"b":1},"l":[5,6]}`, "1 1 6"},
		{"{{ value_json.l[-1] }} {{ value_json.l[5] is defined }}", `{"l":[5,6]}`, "6 False"},
		{"{{ [1, 2, 3][::2] }} {{ 'abcd'[1:-1] }} {{ (1, 2, 3)[1:] }}", "", "[1, 3] bc (2, 3)"},
		{"{{ {'a': 1}.a }} {{ {'a': 1}['a'] }} {{ {1: 'x'}[1] }}", "", "1 1 x"},
		{"{{ 'x' if value else 'y' }} {{ value or 'd' }} {{ value and 'd' }}|", "", "y d |"},
		{"{{ value_json.t | float(0) > 20 }}", `{"t":"21"}`, "True"},
		{"{{ 4 is divisibleby 2 }} {{ 3 is odd }} {{ 'A' is upper }} {{ 1 is number }}", "", "True True True True"},
	})
	runErrCases(t, []errCase{
		{"{{ value_json.a.b }}", `{}`, "has no attribute 'a'"},
		{"{{ -'a' }}", "", "bad operand for unary -"},
		{"{{ 'abc'['x':] }}", "", "slice indices must be integers"},
		{"{{ [1][::0] }}", "", "slice step must be a non-zero integer"},
	})
}
