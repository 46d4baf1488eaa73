package jinja

import (
	"strings"
	"testing"
	"time"
)

// testNow is the clock of the table tests.
var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// render compiles src and renders it on payload as a value template does.
func render(t testing.TB, src, payload string) (string, error) {
	t.Helper()
	tp, err := Compile(src)
	if err != nil {
		return "", err
	}
	res, err := tp.Render(Input{Value: payload, JSON: ValueJSON([]byte(payload)), Now: testNow}, DefaultBudget)
	return res.Text, err
}

type renderCase struct{ tpl, payload, want string }

// runCases renders each case and compares the output.
func runCases(t *testing.T, cases []renderCase) {
	t.Helper()
	for _, tc := range cases {
		got, err := render(t, tc.tpl, tc.payload)
		if err != nil || got != tc.want {
			t.Errorf("%q on %s = %q, %v; want %q", tc.tpl, tc.payload, got, err, tc.want)
		}
	}
}

// errCase is a template whose rendering fails with an error containing
// want.
type errCase struct{ tpl, payload, want string }

func runErrCases(t *testing.T, cases []errCase) {
	t.Helper()
	for _, tc := range cases {
		got, err := render(t, tc.tpl, tc.payload)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q on %s = %q, %v; want an error with %q", tc.tpl, tc.payload, got, err, tc.want)
		}
	}
}

func containsText(s, sub string) bool { return strings.Contains(s, sub) }
