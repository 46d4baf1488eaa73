package rules

import (
	"strings"
	"testing"
)

// TestComputedDurationErrors: a duration computed as NaN, ±Inf, a huge or
// a negative number of seconds, or text too long for any duration, failed
// with "negative duration -2562047h" (the float overflowed int64). Every
// computed duration (delay, a wait's for, seconds()) must say what is
// wrong, with the value and the bound.
func TestComputedDurationErrors(t *testing.T) {
	prog := func(step string) string {
		return `{"name":"d","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[` + step + `]}`
	}
	delay := func(v string) string { return prog(`{"id":"d","delay":"{{ ` + v + ` }}"}`) }
	tests := []struct {
		name, src string
		want      []string
	}{
		{"huge delay", delay("1e300"), []string{`step "d": delay`, "1e+300 seconds", "longest", "2562047h47m16"}},
		{"infinite delay", delay("1/0"), []string{`step "d": delay`, "+Inf", "not a finite number"}},
		{"NaN delay", delay("0/0"), []string{`step "d": delay`, "NaN", "not a finite number"}},
		{"negative delay", delay("-5"), []string{`step "d": delay`, "-5 seconds", "negative"}},
		{"huge text delay", delay("'99999999999h'"), []string{`step "d": delay`, "99999999999h", "longest"}},
		{"huge ISO delay", delay("'P99999999999D'"), []string{`step "d": delay`, "P99999999999D", "longest"}},
		{"huge wait for", prog(`{"id":"w","wait":{"state":"hall_motion.occupancy","to":true,"for":"{{ 1e300 }}"},"timeout":"1m"}`), []string{`step "w": wait for`, "1e+300 seconds", "longest"}},
		{"seconds of bad text", delay("seconds('soon')"), []string{`step "d"`, `bad duration "soon"`}},
		{"seconds of huge text", delay("seconds('P99999999999D')"), []string{`step "d"`, "longest"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, _ := memRun(t, tt.src, DefaultLimits)
			if res.Outcome.Status != StatusFailed {
				t.Fatalf("outcome %+v, want failed", res.Outcome)
			}
			t.Log(res.Outcome.Error)
			for _, w := range tt.want {
				if !strings.Contains(res.Outcome.Error, w) {
					t.Errorf("message %q lacks %q", res.Outcome.Error, w)
				}
			}
		})
	}
}

// TestParseDurationBounds: constant durations that overflow are refused
// as too large, not wrapped around.
func TestParseDurationBounds(t *testing.T) {
	for _, s := range []string{"P99999999999D", "PT99999999999999H", "P9999999W", "99999999999h"} {
		if d, err := ParseDuration(s); err == nil || !strings.Contains(err.Error(), "longest") {
			t.Errorf("ParseDuration(%q) = %v, %v; want a too-large error", s, d, err)
		}
	}
	for _, s := range []string{"PT2M", "P1D", "90s", "-PT5S"} {
		if _, err := ParseDuration(s); err != nil {
			t.Errorf("ParseDuration(%q): %v", s, err)
		}
	}
}
