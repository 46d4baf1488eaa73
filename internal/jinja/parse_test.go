package jinja

import (
	"strings"
	"testing"
)

// TestPrecedence: Jinja's operator precedence.
func TestPrecedence(t *testing.T) {
	runCases(t, []renderCase{
		// Jinja: ** is left-associative, and ~ binds tighter than + and -.
		{"{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }}", "", "7 9 64 4"},
		{"{{ 1 ~ 2 * 3 }} {{ not 1 == 2 }} {{ 1 if 0 else 2 if 1 else 3 }}", "", "16 True 2"},
		{"{{ 'a' if true }}{{ 'b' if false }}", "", "a"},
		{"{{ -value_json.v | abs }} {{ value_json.l[1:] | length }}", `{"v":-3,"l":[1,2,3]}`, "3 2"},
		{"{{ value is defined and value_json.x is not defined }}", `{}`, "True"},
	})
}

// TestNestingBounded: brackets, unary operators, conditionals, statements
// and chains are bounded when the template is compiled.
func TestNestingBounded(t *testing.T) {
	for _, src := range []string{
		"{{ " + strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100) + " }}",
		"{{ " + strings.Repeat("not ", 100) + "1 }}",
		"{{ " + strings.Repeat("-", 100) + "1 }}",
		"{{ 1" + strings.Repeat(" if 1 else 1", 100) + " }}",
		strings.Repeat("{% if 1 %}", 100) + strings.Repeat("{% endif %}", 100),
		"{{ 1" + strings.Repeat(" + 1", maxChain+1) + " }}",
		"{{ value" + strings.Repeat(" | trim", maxChain+1) + " }}",
		"{{ value" + strings.Repeat(".a", maxChain+1) + " }}",
	} {
		if _, err := Compile(src); err == nil {
			t.Errorf("%.40q compiled", src)
		}
	}
	for _, src := range []string{
		"{{ " + strings.Repeat("(", 30) + "1" + strings.Repeat(")", 30) + " }}",
		"{{ 1" + strings.Repeat(" + 1", maxChain-1) + " }}",
	} {
		if _, err := Compile(src); err != nil {
			t.Errorf("%.40q: %v", src, err)
		}
	}
}
