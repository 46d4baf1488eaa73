package jinja

import (
	"errors"
	"testing"
)

// TestMethods: the string and dict methods templates call.
func TestMethods(t *testing.T) {
	runCases(t, []renderCase{
		{"{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a b c'.split(none, 1) }} {{ 'a,b'.split(',', 0) }}", "", "['a', 'b', '', 'c'] ['a', 'b'] ['a', 'b c'] ['a,b']"},
		{"{{ 'Ab'.lower() }}{{ 'ab'.upper() }} {{ 'ab cd'.title() }} {{ 'ab'.capitalize() }}", "", "abAB Ab Cd Ab"},
		{"{{ '  x '.strip() }}|{{ 'xxyxx'.lstrip('x') }}|{{ 'xyy'.rstrip('y') }}|{{ 'aXa'.replace('a', 'b') }}", "", "x|yxx|x|bXb"},
		{"{{ 'abc'.startswith('ab') }} {{ 'abc'.endswith('x') }} {{ '123'.isdigit() }} {{ '-'.join(['a', 'b']) }} {{ 'abc'.find('c') }}", "", "True False True a-b 2"},
		{"{{ value_json.get('a') }} {{ value_json.get('x', 0) }} {{ value_json.keys() | list }} {{ value_json.values() | list }} {{ value_json.items() | list }}", `{"a":1}`, "1 0 ['a'] [1] [('a', 1)]"},
	})
	runErrCases(t, []errCase{
		{"{{ 'a'.split('') }}", "", "empty separator"},
		{"{{ (1).lower() }}", "", "has no such method"},
		{"{{ 'a'.get('x') }}", "", "get() needs a dict"},
	})
}

// TestMethodsCharged: split counts its parts and pays before it makes
// them.
func TestMethodsCharged(t *testing.T) {
	if _, err := render(t, "{{ ('a,' * 40000).split(',') | length }}", ""); !errors.Is(err, ErrSize) && !errors.Is(err, ErrBudget) {
		t.Errorf("40,001 parts: %v, want a budget error", err)
	}
	if got, err := render(t, "{{ ('a,' * 1000).split(',') | length }}", ""); err != nil || got != "1001" {
		t.Errorf("1,001 parts: %q, %v", got, err)
	}
}
