package jinja

import (
	"errors"
	"testing"
)

// TestScalarFilters: conversions, string filters and JSON, as Home
// Assistant has them.
func TestScalarFilters(t *testing.T) {
	runCases(t, []renderCase{
		{"{{ 'x' | float(1.5) }} {{ '0x1A' | int(0, 16) }} {{ ' 3 ' | int }} {{ '2.7' | int }} {{ 'on' | bool }}", "", "1.5 26 3 2 True"},
		{"{{ 2.675 | round(2) }} {{ 2.5 | round }} {{ 1.26 | round(1, 'ceil') }} {{ -2 | abs }}", "", "2.67 2 1.3 2"},
		{"{{ 3 | multiply(1.5) }} {{ 3 | add(1) }} {{ 'x' | multiply(2, 0) }}", "", "4.5 4.0 0"},
		{"{{ 'hello world' | capitalize }} {{ \"it's a b\" | title }} {{ 'AbC' | lower }}{{ 'x' | upper }}", "", "Hello world It's A B abcX"},
		{"{{ '--a--' | trim('-') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'hello world' | truncate(8, false, '..', 0) }}", "", "a bba hello.."},
		{"{{ [3, 1] | first }} {{ 'ab' | last }} {{ {'a': 1} | list }} {{ [1, 2] | join('-') }}", "", "3 b ['a'] 1-2"},
		{"{{ 'aGk=' | base64_decode }} {{ 'hi' | base64_encode }} {{ 'é' | length }}", "", "hi aGk= 1"},
		{"{{ 1 | bool }} {{ 'off' | bool }} {{ 2 | bool(none) }} {{ 'x' | bool('d') }} {{ -1.5 | abs }}", "", "True False None d 1.5"},
		{"{{ 'nan' | is_number }} {{ true | is_number }} {{ '1_0' | is_number }}", "", "False False True"},
		{"{{ value_json.x | default('d') }} {{ '' | default('d', true) }} {{ none | iif('y', 'n', 'none') }}", `{}`, "d d none"},
	})
	runErrCases(t, []errCase{
		{"{{ 'x' | float }}", "", "float got invalid input 'x' and no default was specified"},
		{"{{ 'x' | int(base=99) }}", "", "base must be"},
		{"{{ 'x' | truncate(1) }}", "", "length must be at least"},
		{"{{ '{' | from_json }}", "", "invalid JSON"},
		{"{{ 5 | length }}", "", "has no len()"},
	})
}

// TestScalarFiltersCharged: string filters pay for what they make before
// they make it.
func TestScalarFiltersCharged(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want error
	}{
		{"{% set s = 'a' * 60000 %}{% for i in range(100) %}{{ (s | upper)[0] }}{% endfor %}", ErrBudget},
		{"{{ ('a' * 30000) | replace('a', 'bbb') }}", ErrSize},
		{"{{ ('a' * 60000) | base64_encode }}", ErrSize},
		{"{{ ([('x' * 1000)] * 100) | join }}", ErrSize},
		{"{{ ('[0' ~ ',0' * 30000 ~ ']') | from_json | length }}", nil},
	} {
		if _, err := render(t, tc.src, ""); !errors.Is(err, tc.want) {
			t.Errorf("%.60q: %v, want %v", tc.src, err, tc.want)
		}
	}
}
