package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"

	"context"
	"strings"
	"testing"
	"time"
)

// fieldParamsProg is a program whose trigger (and body) are given, with
// params of every type a param field takes.
func fieldParamsProg(trigger, steps string) string { return fieldParamsProgWith(trigger, steps, "") }

// fieldParamsProgWith declares the params extra too (`, "name": {...}`).
func fieldParamsProgWith(trigger, steps, extra string) string {
	if steps == "" {
		steps = `[{"id": "fan", "call": "living_plug.set", "args": {"state": "ON"}}]`
	}
	return `{"name": "blueprint",
  "params": {"type": "object", "properties": {
    "humidity_level": {"type": "number", "minimum": 0, "maximum": 100, "default": 65},
    "low": {"type": "integer"},
    "open_duration": {"type": "string", "format": "duration", "default": "10m"},
    "wake": {"type": "string", "default": "07:30"},
    "shift": {"type": "string", "default": "-30m"},
    "schedule": {"type": "string", "default": "0 30 7 * * *"},
    "label": {"type": "boolean"}` + extra + `}},
  "triggers": [` + trigger + `],
  "steps": ` + steps + `}`
}

var fieldParamCases = []struct {
	name, trigger string
	bind          map[string]any
	unbound       string // the trigger's plan description, unbound
	bound         string // and bound to bind
}{
	{"above", `{"id": "t", "state": "outdoor_weather.humidity", "above": "{{ params.humidity_level }}"}`, map[string]any{"humidity_level": 70.0},
		"When outdoor_weather.humidity goes above {{ params.humidity_level }} (default 65)", "When outdoor_weather.humidity goes above 70"},
	{"below", `{"id": "t", "state": "outdoor_weather.humidity", "above": 20, "below": "{{ params.low }}"}`, map[string]any{"low": 40.0},
		"When outdoor_weather.humidity goes above 20 and below {{ params.low }}", "When outdoor_weather.humidity goes above 20 and below 40"},
	{"numeric_for", `{"id": "t", "state": "outdoor_weather.humidity", "above": "{{ params.humidity_level }}", "for": "{{ params.open_duration }}"}`, map[string]any{},
		"When outdoor_weather.humidity goes above {{ params.humidity_level }} (default 65) and stays there for {{ params.open_duration }} (default \"10m\")",
		"When outdoor_weather.humidity goes above 65 and stays there for 10 minutes"},
	{"state_for", `{"id": "t", "state": "front_door.contact", "to": false, "for": "{{ params.open_duration }}"}`, map[string]any{"open_duration": "2s"},
		"When front_door.contact changes to false and stays so for {{ params.open_duration }} (default \"10m\")", "When front_door.contact changes to false and stays so for 2 seconds"},
	{"available_for", `{"id": "t", "available": "front_door.contact", "to": false, "for": "{{ params.open_duration }}"}`, map[string]any{"open_duration": "PT1H"},
		"and stays so for {{ params.open_duration }}", "and stays so for 1 hour"},
	{"at", `{"id": "t", "at": "{{ params.wake }}"}`, map[string]any{"wake": "06:45"},
		"Every day at {{ params.wake }} (default \"07:30\")", "Every day at 06:45"},
	{"offset", `{"id": "t", "sun": "sunset", "offset": "{{ params.shift }}"}`, map[string]any{"shift": "15m"},
		"At sunset shifted by {{ params.shift }} (default \"-30m\")", "At 15 minutes after sunset"},
	{"cron", `{"id": "t", "cron": "{{ params.schedule }}"}`, map[string]any{"schedule": "0 30 7 * * 1-5"},
		"On the cron schedule {{ params.schedule }} (default \"0 30 7 * * *\")", "At 07:30"},
}

// TestParamFields decodes, validates and binds each field a param may
// stand in: the unbound plan names the param, the bound one the value.
func TestParamFields(t *testing.T) {
	for _, tc := range fieldParamCases {
		t.Run(tc.name, func(t *testing.T) {
			src := fieldParamsProg(tc.trigger, "")
			res := mustValidate(t, src, ValidateOptions{HasLocation: true})
			if !res.Valid {
				t.Fatalf("invalid: %s", diagString(res.Diagnostics))
			}
			if !res.Compiled.Binds() {
				t.Error("the unbound program does not say it binds")
			}
			if d := planStep(res.Plan, "t").Description; !strings.Contains(d, tc.unbound) {
				t.Errorf("unbound plan %q, want %q", d, tc.unbound)
			}
			b := mustValidate(t, src, ValidateOptions{HasLocation: true, Bind: tc.bind})
			if !b.Valid {
				t.Fatalf("bound invalid: %s", diagString(b.Diagnostics))
			}
			if d := planStep(b.Plan, "t").Description; !strings.Contains(d, tc.bound) {
				t.Errorf("bound plan %q, want %q", d, tc.bound)
			}
			if b.Compiled.Binds() || len(b.Compiled.Triggers()[0].Inputs()) > 0 {
				t.Error("the bound program still has param fields")
			}
			if tr := b.Compiled.Triggers()[0]; tr.Kind() == TriggerTime && tr.Schedule() == nil {
				t.Error("the bound time trigger has no schedule")
			}
		})
	}
}

// TestParamFieldsArmConstants: the bound run form holds the values
// (matching reads them, nothing is evaluated per event).
func TestParamFieldsArmConstants(t *testing.T) {
	src := fieldParamsProg(`{"id": "t", "state": "outdoor_weather.humidity", "above": "{{ params.humidity_level }}", "for": "{{ params.open_duration }}"}`, "")
	b := mustValidate(t, src, ValidateOptions{Bind: map[string]any{"humidity_level": 70.0, "open_duration": "2s"}})
	if !b.Valid {
		t.Fatalf("invalid: %s", diagString(b.Diagnostics))
	}
	tr := b.Compiled.Triggers()[0]
	above, below := tr.Bounds()
	if above == nil || *above != 70 || below != nil || tr.For().Seconds() != 2 {
		t.Errorf("armed above %v below %v hold %s", above, below, tr.For())
	}
	sched := mustValidate(t, fieldParamsProg(`{"id": "t", "at": "{{ params.wake }}"}`, ""), ValidateOptions{Bind: map[string]any{"wake": "06:45:30"}})
	if tr := sched.Compiled.Triggers()[0]; tr.CronSpec() != "30 45 6 * * *" || tr.Schedule() == nil {
		t.Errorf("time trigger %q", tr.CronSpec())
	}
}

// TestParamFieldsWait: a numeric wait's thresholds bind too.
func TestParamFieldsWait(t *testing.T) {
	src := fieldParamsProg(`{"id": "t", "state": "front_door.contact", "to": false}`,
		`[{"id": "dry", "wait": {"state": "outdoor_weather.humidity", "below": "{{ params.humidity_level }}"}, "timeout": "1h"}]`)
	res := mustValidate(t, src, ValidateOptions{})
	if !res.Valid {
		t.Fatalf("invalid: %s", diagString(res.Diagnostics))
	}
	if d := planStep(res.Plan, "dry").Description; !strings.Contains(d, "is below {{ params.humidity_level }} (default 65)") {
		t.Errorf("unbound wait %q", d)
	}
	b := mustValidate(t, src, ValidateOptions{Bind: map[string]any{"humidity_level": 55.5}})
	if d := planStep(b.Plan, "dry").Description; !strings.Contains(d, "is below 55.5") {
		t.Errorf("bound wait %q", d)
	}
}

// TestParamFieldsFindings: the unbound program's params must be declared
// with a type the field takes; a located closed diagnostic otherwise.
func TestParamFieldsFindings(t *testing.T) {
	for _, tc := range []struct {
		name, trigger, code, path, msg string
	}{
		{"undeclared", `{"id": "t", "state": "outdoor_weather.humidity", "above": "{{ params.humid }}"}`, core.CodeBadParams, "/triggers/0/above", "params.humid is not declared"},
		{"string_threshold", `{"id": "t", "state": "outdoor_weather.humidity", "above": "{{ params.wake }}"}`, core.CodeBadParams, "/triggers/0/above", `params.wake has type "string"; above takes a number`},
		{"number_hold", `{"id": "t", "state": "front_door.contact", "for": "{{ params.humidity_level }}"}`, core.CodeBadParams, "/triggers/0/for", `params.humidity_level has type "number"; for takes a duration`},
		{"untyped", `{"id": "t", "at": "{{ params.label }}"}`, core.CodeBadParams, "/triggers/0/at", `params.label has type "boolean"`},
		{"catalog_ref", `{"id": "t", "state": "outdoor_weather.humidity", "below": "{{ params.sensor }}"}`, core.CodeBadParams, "/triggers/0/below", "params.sensor is a catalog reference"}, // declared by the test
		{"bad_default", `{"id": "t", "at": "{{ params.shift }}"}`, core.CodeBadParams, "/triggers/0/at", `the default of params.shift, "-30m", is no at`},
		{"negative_default_hold", `{"id": "t", "state": "front_door.contact", "for": "{{ params.shift }}"}`, core.CodeBadParams, "/triggers/0/for", "a hold cannot be negative"},
		{"expression", `{"id": "t", "state": "outdoor_weather.humidity", "above": "{{ params.humidity_level + 5 }}"}`, core.CodeTypeMismatch, "/triggers/0/above", "exactly \"{{ params.<name> }}\""},
		{"expression_duration", `{"id": "t", "sun": "sunrise", "offset": "{{ now() }}"}`, core.CodeBadDuration, "/triggers/0/offset", "exactly"},
		{"expression_time", `{"id": "t", "at": "{{ params.wake }}:00"}`, core.CodeBadTime, "/triggers/0/at", "exactly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustValidate(t, fieldParamsProgWith(tc.trigger, "", `, "sensor": {"type": "string", "catalog": {"kind": "state"}}`), ValidateOptions{HasLocation: true})
			if res.Valid {
				t.Fatal("valid")
			}
			for _, d := range res.Diagnostics {
				if d.Code == tc.code && d.Path == tc.path && strings.Contains(d.Message, tc.msg) {
					return
				}
			}
			t.Errorf("no %s at %s with %q: %s", tc.code, tc.path, tc.msg, diagString(res.Diagnostics))
		})
	}
}

// TestParamFieldsBindingFindings: a value that does not fit its field
// is an input_binding finding at the param.
func TestParamFieldsBindingFindings(t *testing.T) {
	numeric := `{"id": "t", "state": "outdoor_weather.humidity", "above": "{{ params.humidity_level }}", "for": "{{ params.open_duration }}"}`
	for _, tc := range []struct {
		name, trigger string
		bind          map[string]any
		path, msg     string
	}{
		{"not_a_number", numeric, map[string]any{"humidity_level": "high"}, "/humidity_level", `humidity_level = "high": used as the above at /triggers/0/above: want a number, got a string`},
		{"not_a_duration", numeric, map[string]any{"open_duration": "a while"}, "/open_duration", `open_duration = "a while": used as the for at /triggers/0/for`},
		{"negative_hold", numeric, map[string]any{"open_duration": "-5m"}, "/open_duration", "a hold cannot be negative"},
		{"duration_number", numeric, map[string]any{"open_duration": 5.0}, "/open_duration", "want a duration"},
		{"bad_time", `{"id": "t", "at": "{{ params.wake }}"}`, map[string]any{"wake": "25:00"}, "/wake", `wake = "25:00": used as the at at /triggers/0/at: want a time of day`},
		{"bad_offset", `{"id": "t", "sun": "sunset", "offset": "{{ params.shift }}"}`, map[string]any{"shift": "soon"}, "/shift", `shift = "soon"`},
		{"missing", `{"id": "t", "state": "outdoor_weather.humidity", "below": "{{ params.low }}"}`, map[string]any{}, "/low", `params needs "low": the below at /triggers/0/below`},
		{"empty_band", `{"id": "t", "state": "outdoor_weather.humidity", "above": 50, "below": "{{ params.low }}"}`, map[string]any{"low": 40.0}, "/low", "low = 40: no value is above 50 and below 40"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := fieldParamsProg(tc.trigger, "")
			if pre := mustValidate(t, src, ValidateOptions{HasLocation: true}); !pre.Valid {
				t.Fatalf("unbound program invalid: %s", diagString(pre.Diagnostics))
			}
			res := mustValidate(t, src, ValidateOptions{HasLocation: true, Bind: tc.bind})
			if res.Valid {
				t.Fatalf("valid with %v", tc.bind)
			}
			for _, d := range res.Diagnostics {
				if d.Code == core.CodeInputBinding && d.Path == tc.path && strings.Contains(d.Message, tc.msg) {
					return
				}
			}
			t.Errorf("no input_binding at %s with %q: %s", tc.path, tc.msg, diagString(res.Diagnostics))
		})
	}
}

// TestParamFieldsWaitAtRunTime: an unbound body (a promoted automation
// another rule calls) reads its wait's thresholds from the params it runs
// with; the trace shows the value.
func TestParamFieldsWaitAtRunTime(t *testing.T) {
	src := fieldParamsProg(`{"id": "t", "state": "front_door.contact", "to": false}`,
		`[{"id": "dry", "wait": {"state": "outdoor_weather.humidity", "below": "{{ params.humidity_level }}"}, "timeout": "1h"}]`)
	res := mustValidate(t, src, ValidateOptions{})
	for _, tc := range []struct {
		level  any
		status string
		err    string
	}{
		{60.0, StatusSuccess, ""}, // 50 is below 60: met at once
		{40.0, StatusTimeout, ""}, // 50 is not below 40: it times out
		{"wet", StatusFailed, `params.humidity_level as below: want a number, got a string`},
	} {
		w := NewSimWorld(func(string) (any, bool) { return 50.0, true }, time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC), Scenario{}, nil)
		out := Run(context.Background(), res.Compiled, w, RunInput{Params: map[string]any{"humidity_level": tc.level}, SkipConditions: true, Trigger: TriggerFire{ID: "t", Value: false}})
		if out.Outcome.Status != tc.status || !strings.Contains(out.Outcome.Error, tc.err) {
			t.Errorf("level %v: %+v", tc.level, out.Outcome)
			continue
		}
		for _, s := range out.Steps {
			if s.ID == "dry" && tc.err == "" && s.Input.(map[string]any)["below"] != tc.level {
				t.Errorf("level %v: wait input %v", tc.level, s.Input)
			}
		}
	}
}

// TestParamFieldsOverlapOnceBound: a threshold param is unknown before it
// is bound, so the unbound program's trigger is not taken for an
// installed rule's that lacks that threshold; the bound one is compared.
func TestParamFieldsOverlapOnceBound(t *testing.T) {
	in := installedRule(`{"name": "dry-fan", "triggers": [{"id": "d", "state": "outdoor_weather.humidity", "below": 30}],
	  "steps": [{"id": "off", "call": "living_plug.set", "args": {"state": "OFF"}}]}`)
	src := fieldParamsProg(`{"id": "t", "state": "outdoor_weather.humidity", "above": "{{ params.low }}", "below": 30}`, "")
	overlaps := func(o ValidateOptions) bool {
		o.Installed = in
		for _, d := range mustValidate(t, src, o).Diagnostics {
			if d.Code == core.CodeOverlappingRule {
				return true
			}
		}
		return false
	}
	if overlaps(ValidateOptions{}) {
		t.Error("the unbound threshold was taken for none")
	}
	if overlaps(ValidateOptions{Bind: map[string]any{"low": 10}}) {
		t.Error("a bound threshold the installed rule lacks overlaps")
	}
}

// withCondition is a program whose condition is cond (and whose trigger
// is the door opening).
func withCondition(cond string) string {
	return fieldParamsProgWith(`{"id": "t", "state": "front_door.contact", "to": false}], "conditions": [`+cond, "",
		`, "night_start": {"type": "string", "default": "22:00"}, "night_end": {"type": "string"}`)
}

// TestParamFieldsConditions: a time condition's bounds and a sun
// condition's offsets take params too: planned as the param unbound, as
// the value bound, and the bound window decides the run.
func TestParamFieldsConditions(t *testing.T) {
	for _, tc := range []struct {
		name, cond     string
		bind           map[string]any
		unbound, bound string
	}{
		{"after", `{"id": "c", "time": {"after": "{{ params.night_start }}", "before": "06:00"}}`, map[string]any{"night_start": "21:30"},
			`Only after {{ params.night_start }} (default "22:00") and before 06:00 (server time)`, "Only from 21:30 until 06:00 the next day (server time)"},
		{"before", `{"id": "c", "time": {"before": "{{ params.night_end }}", "weekday": ["sat", "sun"]}}`, map[string]any{"night_end": "08:00"},
			"Only before {{ params.night_end }}, on Sunday and Saturday (server time)", "Only before 08:00, on Sunday and Saturday (server time)"},
		{"sun_offset", `{"id": "c", "sun": {"after": "sunset", "after_offset": "{{ params.shift }}"}}`, map[string]any{"shift": "15m"},
			`Only after sunset shifted by {{ params.shift }} (default "-30m") (the server's location)`, "Only after 15 minutes after sunset (the server's location)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustValidate(t, withCondition(tc.cond), ValidateOptions{HasLocation: true})
			if !res.Valid || !res.Compiled.Binds() {
				t.Fatalf("invalid or not binding: %s", diagString(res.Diagnostics))
			}
			if d := planStep(res.Plan, "c").Description; d != tc.unbound {
				t.Errorf("unbound plan %q, want %q", d, tc.unbound)
			}
			b := mustValidate(t, withCondition(tc.cond), ValidateOptions{HasLocation: true, Bind: tc.bind})
			if !b.Valid {
				t.Fatalf("bound invalid: %s", diagString(b.Diagnostics))
			}
			if d := planStep(b.Plan, "c").Description; d != tc.bound {
				t.Errorf("bound plan %q, want %q", d, tc.bound)
			}
		})
	}
	b := mustValidate(t, withCondition(`{"id": "c", "time": {"after": "{{ params.night_start }}", "before": "06:00"}}`), ValidateOptions{Bind: map[string]any{"night_start": "23:00"}})
	for _, tc := range []struct {
		hour   int
		status string
	}{{23, StatusSuccess}, {22, StatusConditionsNotMet}, {5, StatusSuccess}, {7, StatusConditionsNotMet}} {
		now := time.Date(2026, 1, 5, tc.hour, 30, 0, 0, time.UTC)
		w := NewSimWorld(func(string) (any, bool) { return nil, false }, now, Scenario{}, nil)
		w.SetPlace(Place{Zone: time.UTC})
		if out := Run(context.Background(), b.Compiled, w, RunInput{Trigger: TriggerFire{ID: "t", Value: false}}); out.Outcome.Status != tc.status {
			t.Errorf("at %02d:30 with night_start 23:00: %s, want %s", tc.hour, out.Outcome.Status, tc.status)
		}
	}
}

// TestParamFieldsConditionFindings: the condition's params are checked
// like a trigger's, unbound and bound.
func TestParamFieldsConditionFindings(t *testing.T) {
	for _, tc := range []struct {
		name, cond string
		bind       map[string]any
		code, path string
		msg        string
	}{
		{"number_time", `{"id": "c", "time": {"after": "{{ params.humidity_level }}"}}`, nil, core.CodeBadParams, "/conditions/0/time/after", `params.humidity_level has type "number"`},
		{"expression", `{"id": "c", "time": {"before": "{{ params.night_end }}:00"}}`, nil, core.CodeBadTime, "/conditions/0/time/before", "exactly"},
		{"bad_time", `{"id": "c", "time": {"after": "{{ params.night_start }}"}}`, map[string]any{"night_start": "9pm"}, core.CodeInputBinding, "/night_start", `night_start = "9pm": used as the after at /conditions/0/time/after`},
		{"empty_window", `{"id": "c", "time": {"after": "{{ params.night_start }}", "before": "06:00"}}`, map[string]any{"night_start": "06:00"}, core.CodeInputBinding, "/night_start", "the window is empty"},
		{"bad_offset", `{"id": "c", "sun": {"before": "sunrise", "before_offset": "{{ params.shift }}"}}`, map[string]any{"shift": 5}, core.CodeInputBinding, "/shift", "want a duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustValidate(t, withCondition(tc.cond), ValidateOptions{HasLocation: true, Bind: tc.bind})
			for _, d := range res.Diagnostics {
				if d.Code == tc.code && d.Path == tc.path && strings.Contains(d.Message, tc.msg) {
					return
				}
			}
			t.Errorf("no %s at %s with %q: %s", tc.code, tc.path, tc.msg, diagString(res.Diagnostics))
		})
	}
}
