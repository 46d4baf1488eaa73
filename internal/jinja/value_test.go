package jinja

import (
	"errors"
	"testing"
)

// TestValues: attribute and item look-ups, iteration and slicing of each
// kind of value.
func TestValues(t *testing.T) {
	runCases(t, []renderCase{
		{"{{ 'héllo'[1] }} {{ 'héllo'[-1] }} {{ 'abc'[5] is defined }}", "", "é o False"},
		{"{% for c in 'hé' %}{{ c }}.{% endfor %} {% for k in value_json %}{{ k }}{% endfor %}", `{"b":1,"a":2}`, "h.é. ab"},
		{"{% for k in {'z': 1, 'a': 2} %}{{ k }}{% endfor %}", "", "za"},
		{"{{ value_json.keys }} {{ value_json['keys'] }}", `{"keys":1}`, "<built-in method keys> 1"},
		{"{{ {1: 'a', 1.0: 'b'} }} {{ {1: 'a'}[True] }}", "", "{1: 'b'} a"},
		{"{{ value_json.l[1:3] }} {{ value_json.l[::-1] }}", `{"l":[1,2,3]}`, "[2, 3] [3, 2, 1]"},
		{"{{ none is none }} {{ value_json.f is float }} {{ value_json.i is integer }}", `{"f":1.0,"i":1}`, "True True True"},
	})
	runErrCases(t, []errCase{
		{"{% for x in 5 %}{% endfor %}", "", "int is not iterable"},
		{"{{ 5[1:] }}", "", "int cannot be sliced"},
	})
}

// TestValuesCharged: indexing and iterating a string pay for the bytes
// they scan.
func TestValuesCharged(t *testing.T) {
	src := "{% set s = 'é' * 30000 %}{% for i in range(100) %}{{ s[-1] }}{% endfor %}"
	if _, err := render(t, src, ""); !errors.Is(err, ErrBudget) {
		t.Errorf("100 indexes of 60 kB: %v, want ErrBudget", err)
	}
	if got, err := render(t, "{% set s = 'é' * 30000 %}{{ s[-1] }}", ""); err != nil || got != "é" {
		t.Errorf("one index: %q, %v", got, err)
	}
}
