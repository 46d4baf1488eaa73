package jinja

import (
	"errors"
	"testing"
)

// TestGlobals: range, dict, namespace, zip, min/max and the conversions.
func TestGlobals(t *testing.T) {
	runCases(t, []renderCase{
		{"{{ range(3) | list }} {{ range(1, 7, 3) | list }} {{ range(3, 0, -1) | list }} {{ range(0) | list }}", "", "[0, 1, 2] [1, 4] [3, 2, 1] []"},
		{"{{ dict(a=1) }} {{ dict([('a', 1), ('a', 2)]) }} {{ dict(value_json, b=2) | to_json }}", `{"a":1}`, "{'a': 1} {'a': 2} {\"a\":1,\"b\":2}"},
		{"{{ zip([1, 2, 3], 'ab') | list }} {{ min(3, 1) }} {{ max([2, 5]) }}", "", "[(1, 'a'), (2, 'b')] 1 5"},
		{"{{ float('1.5') }} {{ int('7') }} {{ bool('yes') }} {{ is_number('1e3') }} {{ iif(1, 'a', 'b') }}", "", "1.5 7 True True a"},
	})
	runErrCases(t, []errCase{
		{"{{ range(1, 2, 0) }}", "", "step must not be zero"},
		{"{{ range(20000) }}", "", "range() of more than"},
		{"{{ dict([1]) }}", "", "dict() needs pairs"},
		{"{{ float() }}", "", "missing argument"},
	})
}

// TestDictCharged: building a dict compares each key with those before
// it, and pays for it.
func TestDictCharged(t *testing.T) {
	if _, err := render(t, "{{ dict(zip(range(10000), range(10000))) | length }}", ""); !errors.Is(err, ErrBudget) {
		t.Errorf("10,000 keys: %v, want ErrBudget", err)
	}
	if got, err := render(t, "{{ dict(zip(range(100), range(100))) | length }}", ""); err != nil || got != "100" {
		t.Errorf("100 keys: %q, %v", got, err)
	}
}
