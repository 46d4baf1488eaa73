package jinja

import (
	"errors"
	"strings"
	"testing"
)

// TestPrint: str() and repr() as Python prints them.
func TestPrint(t *testing.T) {
	runCases(t, []renderCase{
		{"{{ none }} {{ true }} {{ 1.0 }} {{ 2 }} {{ 'a' }}", "", "None True 1.0 2 a"},
		{"{{ ['a', \"b'c\", 'd\"e', 'x\\ny'] }}", "", `['a', "b'c", 'd"e', 'x\ny']`},
		{"{{ (1,) }} {{ (1, 'a') }} {{ () }}", "", "(1,) (1, 'a') ()"},
		{"{{ {'b': 1, 2: [none]} }}", "", "{'b': 1, 2: [None]}"},
		{"{{ value_json }}", `{"b":{"c":"é"},"a":1.5}`, "{'a': 1.5, 'b': {'c': 'é'}}"},
		{"{% for x in [1] %}{{ loop }}{% endfor %}", "", "<LoopContext 1/1>"},
		{"{{ value_json.items }}", `{}`, "<built-in method items>"},
		{"{{ '%r' % ('it\\'s',) }}", "", `"it's"`},
	})
}

// TestPrintBounded: printing stops at MaxDepth and MaxValue with an
// error, and brief texts for error messages are cut.
func TestPrintBounded(t *testing.T) {
	deep := "{% set ns = namespace(x=0) %}{% for i in range(200) %}{% set ns.x = [ns.x] %}{% endfor %}{{ ns.x }}"
	if _, err := render(t, deep, ""); !errors.Is(err, ErrDepth) {
		t.Errorf("printing 200 levels: %v, want ErrDepth", err)
	}
	wide := "{% set a = ['x' * 1000] * 100 %}{{ a }}"
	if _, err := render(t, wide, ""); !errors.Is(err, ErrSize) {
		t.Errorf("printing 100 kB: %v, want ErrSize", err)
	}
	if b := brief(strings.Repeat("x", 1000)); len(b) > briefLen+3 {
		t.Errorf("brief made %d bytes", len(b))
	}
	if got := Str([]any{1, "a", nil}); got != "[1, 'a', None]" {
		t.Errorf("Str = %q", got)
	}
}
