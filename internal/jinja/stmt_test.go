package jinja

import "testing"

// TestStatements: if/elif/else, for with else and a condition, set,
// break and continue, and what the compiler refuses.
func TestStatements(t *testing.T) {
	runCases(t, []renderCase{
		{"{% if 0 %}a{% elif 1 %}b{% else %}c{% endif %}", "", "b"},
		{"{% for x in 'ab' %}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", "", "021TrueFalse2;110FalseTrue2;"},
		{"{% for x in [] %}a{% else %}empty{% endfor %}", "", "empty"},
		{"{% for x in [1, 2, 3, 4] if x is even %}{{ x }}{% endfor %}", "", "24"},
		{"{% for x in range(5) %}{% if x == 1 %}{% continue %}{% endif %}{% if x == 3 %}{% break %}{% endif %}{{ x }}{% endfor %}", "", "02"},
		{"{% for k, v in [('a', 1), ('b', 2)] %}{{ k }}{{ v }}{% endfor %}", "", "a1b2"},
		{"{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}", "", "1"},
		{"{% set ns = namespace(x=1) %}{% for i in [1] %}{% set ns.x = 2 %}{% endfor %}{{ ns.x }}", "", "2"},
	})
	for _, tc := range []struct{ src, want string }{
		{"{% break %}", "outside a loop"},
		{"{% set x %}", "only {% set name = expression %}"},
		{"{% for x in %}{% endfor %}", "unexpected"},
		{"{% macro m() %}{% endmacro %}", `"macro" is not supported`},
		{"{% set f = 1 %}{{ f() }}", "calling f is not supported"},
	} {
		if _, err := Compile(tc.src); err == nil || !containsText(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.src, err, tc.want)
		}
	}
	runErrCases(t, []errCase{
		{"{% set x = 1 %}{% set x.a = 2 %}", "", "is not a namespace"},
		{"{% for a, b in [1] %}{% endfor %}", "", "cannot unpack 1"},
	})
}
