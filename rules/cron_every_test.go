package rules

import (
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/decode"
)

// TestCronEveryNeedsWholeSeconds: robfig/cron runs "@every d" at most once
// a second and drops what is below a second, so "@every -1s" and
// "@every 1ns" were accepted and fired every second. A duration below a
// second or with a fraction of one is refused at validate, saying why.
func TestCronEveryNeedsWholeSeconds(t *testing.T) {
	for _, tt := range []struct {
		spec string
		ok   bool
	}{
		{"@every 1s", true}, {"@every 90s", true}, {"@every 1h30m", true}, {"CRON_TZ=Europe/Paris @every 5m", true},
		{"@hourly", true}, {"*/5 * * * *", true},
		{"@every -1s", false}, {"@every 1ns", false}, {"@every 0s", false}, {"@every 999ms", false},
		{"@every 1500ms", false}, {"@every  -5m", false}, {"TZ=UTC @every 10ms", false}, {"@every", false},
	} {
		src := `{"name":"c","triggers":[{"id":"c","cron":"` + tt.spec + `"}],"steps":[{"id":"x","stop":""}]}`
		_, ds, err := decode.Decode([]byte(src), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if tt.ok {
			if len(ds) != 0 {
				t.Errorf("%q: %s", tt.spec, diagString(ds))
			}
			continue
		}
		if len(ds) != 1 || ds[0].Code != core.CodeBadCron || ds[0].Path != "/triggers/0/cron" {
			t.Errorf("%q: want one bad_cron at /triggers/0/cron, got %s", tt.spec, diagString(ds))
			continue
		}
		if msg := ds[0].Message; tt.spec != "@every" && !strings.Contains(msg, "whole number of seconds") {
			t.Errorf("%q: message %q does not say what @every takes", tt.spec, msg)
		}
	}
}

// TestCronThatNeverFiresIsRefused: a spec no date matches (30 February,
// 31 April) was armed and never fired; it is now a bad_cron at validate
// that says so. 29 February fires within five years and is kept.
func TestCronThatNeverFiresIsRefused(t *testing.T) {
	for _, tt := range []struct {
		spec string
		ok   bool
	}{
		{"0 0 29 2 *", true}, {"0 7 * * 1-5", true}, {"0 0 31 * *", true},
		{"0 0 30 2 *", false}, {"0 0 31 4 *", false}, {"0 0 0 31 11 *", false},
	} {
		src := `{"name":"c","triggers":[{"id":"c","cron":"` + tt.spec + `"}],"steps":[{"id":"x","stop":""}]}`
		_, ds, err := decode.Decode([]byte(src), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case tt.ok && len(ds) != 0:
			t.Errorf("%q: %s", tt.spec, diagString(ds))
		case !tt.ok && (len(ds) != 1 || ds[0].Code != core.CodeBadCron || !strings.Contains(ds[0].Message, "never fires")):
			t.Errorf("%q: want one bad_cron saying it never fires, got %s", tt.spec, diagString(ds))
		}
	}
}
