package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/interp"
	"github.com/pilothouse/pilothouse/rules/internal/model"
	"github.com/pilothouse/pilothouse/rules/internal/plan"

	"testing"
	"time"
)

func TestPhrasing(t *testing.T) {
	cases := []struct{ got, want string }{
		{Plural(0, "trigger", ""), "0 triggers"},
		{Plural(1, "trigger", ""), "1 trigger"},
		{Plural(2, "trigger", ""), "2 triggers"},
		{Plural(1, "entry", "entries"), "1 entry"},
		{Plural(3, "entry", "entries"), "3 entries"},
		{JoinList(nil, "and"), ""},
		{JoinList([]string{"a"}, "and"), "a"},
		{JoinList([]string{"a", "b"}, "or"), "a or b"},
		{JoinList([]string{"a", "b", "c"}, "and"), "a, b and c"},
		{clock.HumanDuration(0), "0 seconds"},
		{clock.HumanDuration(500 * time.Millisecond), "500 milliseconds"},
		{clock.HumanDuration(time.Millisecond), "1 millisecond"},
		{clock.HumanDuration(1500 * time.Millisecond), "1.5 seconds"},
		{clock.HumanDuration(time.Second), "1 second"},
		{clock.HumanDuration(300 * time.Second), "5 minutes"},
		{clock.HumanDuration(90 * time.Second), "1 minute and 30 seconds"},
		{clock.HumanDuration(time.Hour + 30*time.Minute), "1 hour and 30 minutes"},
		{clock.HumanDuration(26*time.Hour + 5*time.Second), "1 day, 2 hours and 5 seconds"},
		{clock.HumanDuration(-15 * time.Minute), "15 minutes"},
		{clock.HumanDuration(2*time.Minute + 250*time.Millisecond), "2 minutes and 250ms"},
		{plan.Every(time.Hour), "every hour"},
		{plan.Every(5 * time.Minute), "every 5 minutes"},
		{plan.Every(90 * time.Minute), "every 1 hour and 30 minutes"},
		{SunPhrase("sunset", 0), "sunset"},
		{SunPhrase("sunset", 15*time.Minute), "15 minutes after sunset"},
		{SunPhrase("sunrise", -90*time.Minute), "1 hour and 30 minutes before sunrise"},
		{plan.Capitalize("when x changes"), "When x changes"},
		{plan.Capitalize(""), ""},
		{plan.MidSentence("When x changes"), "when x changes"},
		{JoinList(model.DayNamesLong([]any{"mon", "fri"}), "and"), "Monday and Friday"},
		{plan.TriggersText(1), "The run starts when this trigger fires"},
		{plan.TriggersText(2), "The run starts when any of these 2 triggers fires"},
	}
	for i, c := range cases {
		if c.got != c.want {
			t.Errorf("case %d: got %q, want %q", i, c.got, c.want)
		}
	}
}

// TestPlanWording reads a plan as its user does: no "(s)", singular and
// plural right, durations spelled out, arguments by name.
func TestPlanWording(t *testing.T) {
	src := prog(`[
	  {"id":"pick","choose":[{"when":"true","do":[{"id":"a","call":"hall_light.set","args":{"brightness":20}}]}]},
	  {"id":"once","repeat":{"count":1},"do":[{"id":"pause","delay":"300s"}]},
	  {"id":"quiet","wait":{"state":"hall_motion.occupancy","to":false,"for":"2m"},"timeout":"1h","continue_on_timeout":true}]`)
	res := mustValidate(t, src, ValidateOptions{})
	if !res.Valid {
		t.Fatalf("invalid: %s", diagString(res.Diagnostics))
	}
	want := map[string]string{
		TriggersStepID: "The run starts when this trigger fires",
		"pick":         "Take this option if its condition holds, else nothing",
		"a":            "Call hall_light.set with brightness 20",
		"once":         "Run once",
		"pause":        "Wait 5 minutes",
		"quiet":        "Wait until hall_motion.occupancy is false for 2 minutes (at most 1 hour, then the run goes on)",
	}
	for id, w := range want {
		if d := planStep(res.Plan, id).Description; d != w {
			t.Errorf("%s: %q, want %q", id, d, w)
		}
	}
	if s := res.Plan.Summary; s != "Rule t (mode single) runs when its trigger fires; it calls hall_light.set. Highest risk: control." {
		t.Errorf("summary %q", s)
	}
}

// TestStatusSentences: every status in the closed tables has its words.
func TestStatusSentences(t *testing.T) {
	for _, s := range append(append([]core.StatusInfo{}, RunStatuses...), core.StepStatuses...) {
		if s.Said == "" {
			t.Errorf("status %s has no Said", s.Status)
		}
	}
	if got := OutcomeSentence(StatusTimeout, "step \"w\": wait timed out."); got != `The run timed out: step "w": wait timed out.` {
		t.Errorf("timeout: %q", got)
	}
	if got := StepSentence("on", StepNotConnected, ""); got != `Step "on" could not reach the MQTT broker.` {
		t.Errorf("step: %q", got)
	}
}

// TestTriggerReasons: a trace's "because" for schedules reads as words.
func TestTriggerReasons(t *testing.T) {
	src := `{"name":"t","triggers":[{"id":"t","at":"07:00"},{"id":"s","sun":"sunset","offset":"15m"}],"steps":[{"id":"x","stop":"done"}]}`
	res := mustValidate(t, src, ValidateOptions{HasLocation: true})
	if !res.Valid {
		t.Fatalf("invalid: %s", diagString(res.Diagnostics))
	}
	trs := res.Compiled.Triggers()
	for i, want := range []string{"it was 07:00", "it was 15 minutes after sunset"} {
		if got := interp.TriggerReason(&trs[i], TriggerFire{}); got != want {
			t.Errorf("trigger %d: %q, want %q", i, got, want)
		}
	}
}

// TestPlanWordingByParam: a wait on a catalog-reference param keeps what
// it waits for ("is false"), as the bound plan says it (an assistant
// read "Wait for {{ params.sensor }}" and lost the "to false").
func TestPlanWordingByParam(t *testing.T) {
	src := `{"name":"t","params":{"type":"object","required":["sensor"],"properties":{
	  "sensor":{"type":"string","catalog":{"kind":"state","type":"binary_sensor"}}}},
	  "triggers":[{"id":"m","state":"{{ params.sensor }}","to":true}],
	  "steps":[{"id":"quiet","wait":{"state":"{{ params.sensor }}","to":false,"for":"2m"},"timeout":"1h"}]}`
	res := mustValidate(t, src, ValidateOptions{})
	if !res.Valid {
		t.Fatalf("invalid: %s", diagString(res.Diagnostics))
	}
	want := "Wait until {{ params.sensor }} is false for 2 minutes (at most 1 hour, then the run times out)"
	if d := planStep(res.Plan, "quiet").Description; d != want {
		t.Errorf("%q, want %q", d, want)
	}
}
