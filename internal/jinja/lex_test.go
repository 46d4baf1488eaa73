package jinja

import (
	"strings"
	"testing"
)

// TestSplitTemplate: text, expressions, statements and comments, with
// whitespace control and raw blocks.
func TestSplitTemplate(t *testing.T) {
	runCases(t, []renderCase{
		{"a {{- value -}} b", "x", "axb"},
		{"a {{ value }} b", "x", "a x b"},
		{"a\n  {%- if 1 -%}\n  b\n{%- endif %}", "", "ab"},
		{"{# {{ value }} #}c", "x", "c"},
		{"{% raw %}{{ x }}{% endraw %}", "", "{{ x }}"},
		{"{{ '}}' }}", "", "}}"},
		{"x\n", "", "x"},
	})
	for _, tc := range []struct{ src, want string }{
		{"{{ value", "not closed"},
		{"{# x", "unclosed comment"},
		{"{% raw %}x", "endraw"},
		{"{{ 'abc }}", "unterminated string"},
		{strings.Repeat("x", MaxTemplateLen+1), "template longer than"},
	} {
		if _, err := Compile(tc.src); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.30q: %v, want %q", tc.src, err, tc.want)
		}
	}
}

// TestLexExpr: numbers, strings and operators as Jinja reads them.
func TestLexExpr(t *testing.T) {
	runCases(t, []renderCase{
		{"{{ 1_000 }} {{ 0.5 }} {{ 1e3 }}", "", "1000 0.5 1000.0"},
		{"{{ 'a' 'b' }} {{ \"c\\\"d\" }} {{ 'e\\'f' }}", "", "ab c\"d e'f"},
		{"{{ 2**3 }} {{ 7//2 }} {{ 1 != 2 }} {{ 1 <= 2 >= 1 }}", "", "8 3 True True"},
	})
}
