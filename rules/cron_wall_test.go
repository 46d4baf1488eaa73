package rules

import (
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whatever the machine has installed
)

// firingsBetween walks a trigger's schedule as the cron runner does (each
// firing asks for the next after it) on a simulated clock.
func firingsBetween(t *testing.T, trig *RunTrigger, from, to time.Time) []string {
	t.Helper()
	var out []string
	for at := trig.Schedule().Next(from); !at.IsZero() && at.Before(to); at = trig.Schedule().Next(at) {
		out = append(out, at.Format("01-02 15:04 -07"))
		if len(out) > 500 {
			t.Fatal("runaway schedule")
		}
	}
	return out
}

// TestScheduleAcrossDaylightSaving: a schedule reads the wall clock. A
// time the spring-forward gap skips runs once at the first instant after
// the gap (robfig/cron skipped the day); a time the fall-back repeats runs
// once, the first time (robfig/cron ran it twice); a schedule that runs
// every hour follows the clock through both hours. Europe/Paris in 2026:
// 02:00 → 03:00 on 29 March, 03:00 → 02:00 on 25 October;
// Australia/Lord_Howe moves by half an hour (02:00 → 02:30 on 4 October).
func TestScheduleAcrossDaylightSaving(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	lordHowe, err := time.LoadLocation("Australia/Lord_Howe")
	if err != nil {
		t.Fatal(err)
	}
	spring := time.Date(2026, 3, 28, 12, 0, 0, 0, paris)
	fall := time.Date(2026, 10, 24, 12, 0, 0, 0, paris)
	for _, tc := range []struct {
		name, trigger string
		zone          *time.Location
		from          time.Time
		hours         time.Duration
		want          []string
	}{
		{"at in the gap", `"at": "02:05"`, paris, spring, 48, []string{"03-29 03:00 +02", "03-30 02:05 +02"}},
		{"cron in the gap", `"cron": "0 5 2 * * *"`, paris, spring, 48, []string{"03-29 03:00 +02", "03-30 02:05 +02"}},
		{"cron every 15 minutes of the gap hour", `"cron": "0 */15 2 * * *"`, paris, spring, 24,
			[]string{"03-29 03:00 +02"}},
		{"cron at the gap's end", `"cron": "0 0 3 * * *"`, paris, spring, 48, []string{"03-29 03:00 +02", "03-30 03:00 +02"}},
		{"at before the gap", `"at": "01:59"`, paris, spring, 48, []string{"03-29 01:59 +01", "03-30 01:59 +02"}},
		{"at in the repeated hour", `"at": "02:20"`, paris, fall, 48, []string{"10-25 02:20 +02", "10-26 02:20 +01"}},
		{"cron in the repeated hour", `"cron": "0 */20 2 * * *"`, paris, fall, 24,
			[]string{"10-25 02:00 +02", "10-25 02:20 +02", "10-25 02:40 +02"}},
		{"fixed hours run a repeated time once", `"cron": "0 */30 1-3 * * *"`, paris, fall, 24,
			[]string{"10-25 01:00 +02", "10-25 01:30 +02", "10-25 02:00 +02", "10-25 02:30 +02", "10-25 03:00 +01", "10-25 03:30 +01"}},
		{"every hour follows the clock", `"cron": "0 30 * * * *"`, paris, time.Date(2026, 10, 25, 1, 0, 0, 0, paris), 3,
			[]string{"10-25 01:30 +02", "10-25 02:30 +02", "10-25 02:30 +01"}},
		{"half-hour gap", `"at": "02:10"`, lordHowe, time.Date(2026, 10, 3, 12, 0, 0, 0, lordHowe), 48,
			[]string{"10-04 02:30 +11", "10-05 02:10 +11"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := `{"name":"d","triggers":[{"id":"t",` + tc.trigger + `}],"steps":[{"id":"x","stop":""}]}`
			res := mustValidate(t, src, ValidateOptions{Zone: tc.zone})
			if !res.Valid {
				t.Fatal(diagString(res.Diagnostics))
			}
			trig := &res.Compiled.Triggers()[0]
			got := firingsBetween(t, trig, tc.from.In(tc.zone), tc.from.Add(tc.hours*time.Hour))
			if strings.Join(got, ", ") != strings.Join(tc.want, ", ") {
				t.Errorf("fires at\n  %s\nwant\n  %s", strings.Join(got, ", "), strings.Join(tc.want, ", "))
			}
		})
	}
}

// TestPlanSaysWhatDaylightSavingDoes: a schedule whose time daylight
// saving skips or repeats says what then happens; others say nothing more.
func TestPlanSaysWhatDaylightSavingDoes(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		trigger string
		zone    *time.Location
		want    string
	}{
		{`"at": "02:05"`, paris, "Every day at 02:05 (Europe/Paris; on a daylight-saving change a skipped time runs once when the clock jumps forward, a repeated time once, the first time)"},
		{`"cron": "0 30 2 * 3 0"`, paris, "when daylight saving skips its time it runs once, as the clock jumps forward)"},
		{`"cron": "0 30 2 * 10 0"`, paris, "when daylight saving repeats its time it runs once, the first time)"},
		{`"at": "07:30"`, paris, "Every day at 07:30 (Europe/Paris)"},
		{`"at": "02:05"`, time.UTC, "Every day at 02:05 (UTC)"},
		{`"cron": "*/5 * * * *"`, paris, "Every 5 minutes (cron */5 * * * *) (Europe/Paris)"},
	} {
		src := `{"name":"d","triggers":[{"id":"t",` + tc.trigger + `}],"steps":[{"id":"x","stop":""}]}`
		res := mustValidate(t, src, ValidateOptions{Zone: tc.zone})
		if !res.Valid {
			t.Fatal(diagString(res.Diagnostics))
		}
		if d := planStep(res.Plan, "t").Description; !strings.HasSuffix(d, tc.want) {
			t.Errorf("%s in %s: %q, want it to end %q", tc.trigger, tc.zone, d, tc.want)
		}
	}
}
