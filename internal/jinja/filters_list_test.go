package jinja

import (
	"errors"
	"testing"
)

// TestListFilters: map, select, sort, unique and the others over lists
// and dicts.
func TestListFilters(t *testing.T) {
	runCases(t, []renderCase{
		{"{{ value_json.l | map(attribute='v') | list }} {{ ['1', '2'] | map('int') | sum }}", `{"l":[{"v":1},{"w":2}]}`, "[1, Undefined] 3"},
		{"{{ [1, 0, 2] | select | list }} {{ [1, 2, 3] | reject('odd') | list }} {{ [1, 5] | select('>', 2) | list }}", "", "[1, 2] [2] [5]"},
		{"{{ value_json.l | selectattr('on') | map(attribute='n') | join }}", `{"l":[{"n":"a","on":true},{"n":"b"}]}`, "a"},
		{"{{ [3, 1, 2] | sort }} {{ [3, 1, 2] | sort(true) }} {{ value_json.l | sort(attribute='v') | map(attribute='v') | list }}", `{"l":[{"v":2},{"v":1}]}`, "[1, 2, 3] [3, 2, 1] [1, 2]"},
		{"{{ [1, 1.0, 2, '2'] | unique | list }} {{ 'abc' | reverse }} {{ [1, 2] | reverse | list }}", "", "[1, 2, '2'] cba [2, 1]"},
		{"{{ [1, 2.5] | sum }} {{ [[1], [2]] | sum(start=[]) }} {{ [2, 9, 4] | max }} {{ [] | min is defined }}", "", "3.5 [1, 2] 9 False"},
		{"{{ value_json | items | list }} {{ {'b': 1} | items | list }}", `{"a":1}`, "[('a', 1)] [('b', 1)]"},
		{"{{ 12 | bitwise_and(4) }} {{ 1 | bitwise_or(2) }} {{ 3 | bitwise_xor(1) }} {{ 'A' | ord }} {{ [1] | contains(1) }}", "", "4 3 2 65 True"},
	})
	runErrCases(t, []errCase{
		{"{{ [1, 'a'] | sort }}", "", "not supported between"},
		{"{{ [1] | map('nope') }}", "", "no filter named 'nope'"},
		{"{{ [1] | select('nope') }}", "", "no test named 'nope'"},
		{"{{ 5 | items }}", "", "can only get item pairs"},
		{"{{ 'ab' | ord }}", "", "string of length 2"},
	})
}

// TestListFiltersCharged: sort and unique pay for every comparison.
func TestListFiltersCharged(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want error
	}{
		{"{{ range(10000) | list | unique | length }}", ErrBudget},
		{"{{ range(300) | list | unique | length }}", nil},
		{"{% set a = [0] * 1000 %}{% set c = [0] * 1000 %}{{ ([a, c] * 100) | sort | length }}", ErrBudget},
	} {
		if _, err := render(t, tc.src, ""); !errors.Is(err, tc.want) {
			t.Errorf("%.60q: %v, want %v", tc.src, err, tc.want)
		}
	}
}
