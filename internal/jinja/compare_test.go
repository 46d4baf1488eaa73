package jinja

import (
	"errors"
	"testing"
)

// TestCompare: Python's ==, ordering and `in` across types.
func TestCompare(t *testing.T) {
	runCases(t, []renderCase{
		{"{{ 1 == 1.0 }} {{ 1 == '1' }} {{ True == 1 }} {{ none == none }}", "", "True False True True"},
		{"{{ [1, [2]] == [1, [2]] }} {{ (1, 2) == [1, 2] }} {{ [] == [] }}", "", "True False True"},
		{"{{ {'a': 1} == {'a': 1.0} }} {{ value_json == {'b': [1], 'a': 1} }} {{ value_json != {'a': 1} }}", `{"a":1,"b":[1]}`, "True True True"},
		{"{{ [1, 2] < [1, 3] }} {{ [1, 2] < [1, 2, 0] }} {{ (2,) > (1, 9) }} {{ 'b' >= 'ab' }}", "", "True True True True"},
		{"{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'a' in value_json }} {{ 1 in {1: 2} }} {{ 'x' not in value_json }}", `{"a":1}`, "True True True True True"},
		{"{% set a = [0] * 100 %}{% set b = [a] * 100 %}{{ b == b }} {{ b <= b }}", "", "True True"},
		{"{% set ns = namespace() %}{{ ns == ns }} {{ ns == namespace() }}", "", "True False"},
	})
	runErrCases(t, []errCase{
		{"{{ [1] < ['a'] }}", "", "not supported between"},
		{"{{ 1 in 'abc' }}", "", "requires string as left operand"},
		{"{{ 1 in 5 }}", "", "not iterable"},
	})
}

// TestCompareCharged: a walk pays for every item it visits.
func TestCompareCharged(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want error
	}{
		{"{% set a = [0] * 3000 %}{% set c = [0] * 3000 %}{% set b = [a] * 30 %}{% set d = [c] * 30 %}{{ b == d }}", ErrBudget},
		{"{% set a = [0] * 3000 %}{% set b = [a] * 30 %}{{ b == b }}", nil},
		{"{% set a = [0] * 3000 %}{% set c = [0] * 3000 %}{% set b = [a] * 30 %}{% set d = [c] * 30 %}{{ d in [b] }}", ErrBudget},
	} {
		_, err := render(t, tc.src, "")
		if !errors.Is(err, tc.want) {
			t.Errorf("%.60q: %v, want %v", tc.src, err, tc.want)
		}
	}
}
