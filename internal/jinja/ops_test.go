package jinja

import (
	"errors"
	"testing"
)

// TestOperators: arithmetic, concatenation and repetition with Python's
// semantics.
func TestOperators(t *testing.T) {
	runCases(t, []renderCase{
		{"{{ 7 // -2 }} {{ -7 % 3 }} {{ 7.5 // 2 }} {{ 2 ** -1 }} {{ 9223372036854775807 + 1 }}", "", "-4 2 3.0 0.5 9.223372036854776e+18"},
		{"{{ [1] + [2] }} {{ (1,) + (2,) }} {{ 'a' + 'b' }} {{ 1 ~ none }}", "", "[1, 2] (1, 2) ab 1None"},
		{"{{ 'ab' * 2 }} {{ 2 * [0] }} {{ [] * 5 }} {{ 'x' * 0 }}|", "", "abab [0, 0] [] |"},
		{"{{ '|%5.1f|%-3d|%s|%x' % (3.14159, 7, 'a', 255) }}", "", "|  3.1|7  |a|ff"},
		{"{{ '%s' % [1, 'a'] }} {{ '%r' % 'a' }}", "", "[1, 'a'] 'a'"},
	})
	runErrCases(t, []errCase{
		{"{{ 1 // 0 }}", "", "integer division or modulo by zero"},
		{"{{ 1 / 0.0 }}", "", "division by zero"},
		{"{{ 'a' - 1 }}", "", "unsupported operand types for -"},
		{"{{ '%d' % 'x' }}", "", "a real number is required"},
		{"{{ '%s %s' % (1,) }}", "", "not enough arguments"},
		{"{{ '%99999d' % 1 }}", "", "format width too large"},
	})
}

// TestRepeatCharged: repetition is charged and bounded before it makes
// its result, and an empty sequence repeats at once.
func TestRepeatCharged(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want error
	}{
		{"{{ [] * 9000000000000000000 }}", nil},
		{"{{ [0] * 70000 }}", ErrSize},
		{"{{ ([0] * 60000) | length }}", nil},
		{"{% for i in range(10) %}{{ ([0] * 60000) | length }}{% endfor %}", ErrBudget},
	} {
		if _, err := render(t, tc.src, ""); !errors.Is(err, tc.want) {
			t.Errorf("%q: %v, want %v", tc.src, err, tc.want)
		}
	}
}
