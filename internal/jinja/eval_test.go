package jinja

import (
	"errors"
	"testing"
)

// TestRenderResult: the output is stripped, an undefined value printed
// alone is reported, and Spent counts the budget used.
func TestRenderResult(t *testing.T) {
	for _, tc := range []struct {
		src, payload string
		want         Result
	}{
		{"  {{ value }}  ", "x", Result{Text: "x", Spent: 4}},
		{"{{ value_json.missing }}", `{}`, Result{Undef: true, Spent: 4}},
		{"a{{ value_json.missing }}", `{}`, Result{Text: "a", Undef: true, Spent: 5}},
	} {
		tp, err := Compile(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tp.Render(Input{Value: tc.payload, JSON: ValueJSON([]byte(tc.payload))}, DefaultBudget)
		if err != nil || got != tc.want {
			t.Errorf("%q = %+v, %v; want %+v", tc.src, got, err, tc.want)
		}
	}
}

// TestRenderBudget: a rendering stops at its budget, whatever it is, and
// the output is bounded by MaxValue.
func TestRenderBudget(t *testing.T) {
	tp, err := Compile("{% for i in range(100) %}{{ i }}{% endfor %}")
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{0, 10, 100, 200} {
		res, err := tp.Render(Input{}, budget)
		if !errors.Is(err, ErrBudget) || res.Spent > budget {
			t.Errorf("budget %d: %+v, %v; want ErrBudget within it", budget, res, err)
		}
	}
	if res, err := tp.Render(Input{}, DefaultBudget); err != nil || res.Spent > 700 {
		t.Errorf("within the default: %+v, %v", res, err)
	}
	big, _ := Compile("{% for i in range(100) %}{{ 'x' * 1000 }}{% endfor %}")
	if _, err := big.Render(Input{}, DefaultBudget); !errors.Is(err, ErrSize) {
		t.Errorf("100 kB of output: %v, want ErrSize", err)
	}
}

// TestCommandVars: a command template reads value and its variables;
// value_json is undefined.
func TestCommandVars(t *testing.T) {
	tp, err := Compile("{{ value }} {{ position }} {{ value_json is defined }}")
	if err != nil {
		t.Fatal(err)
	}
	res, err := tp.Render(Input{Value: 1.5, JSON: NoJSON, Vars: map[string]any{"position": 50}}, DefaultBudget)
	if err != nil || res.Text != "1.5 50 False" {
		t.Errorf("= %+v, %v", res, err)
	}
}
