package rules

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
)

// TestSelectorValidate checks calls and triggers by selector as an
// assistant writes them: well-formed, resolved now (or a located
// warning), arguments checked against every action they address.
func TestSelectorValidate(t *testing.T) {
	cat := taggedCatalog()
	tests := []struct {
		name, step, trigger string
		code, path, msg     string // "" code: valid with no finding
	}{
		{name: "lights off", step: `{"id":"off","call":{"type":"light","action":"set"},"args":{"state":"OFF"}}`},
		{name: "area and type", step: `{"id":"off","call":{"area":"HALL","type":"light","action":"set"},"args":{"state":"OFF"}}`},
		{name: "nothing there", step: `{"id":"off","call":{"area":"attic","action":"set"},"args":{"state":"OFF"}}`,
			code: core.CodeNoMatch, path: "/steps/0/call", msg: `"set" of every device in area "attic"`},
		{name: "one rejects", step: `{"id":"off","call":{"area":"hall","action":"set"},"args":{"state":"OFF"}}`,
			code: core.CodeBadArguments, path: "/steps/0/args/state", msg: "front_lock.set"},
		{name: "templated", step: `{"id":"off","call":{"area":"{{ params.a }}","action":"set"},"args":{"state":"OFF"}}`,
			code: core.CodeConstraint, path: "/steps/0/call/area", msg: "constant"},
		{name: "no action", step: `{"id":"off","call":{"area":"hall"},"args":{"state":"OFF"}}`,
			code: core.CodeMissingField, path: "/steps/0/call", msg: `"action"`},
		{name: "no filter", step: `{"id":"off","call":{"action":"set"},"args":{"state":"OFF"}}`,
			code: core.CodeMissingField, path: "/steps/0/call", msg: "area, type, tag"},
		{name: "unknown member", step: `{"id":"off","call":{"room":"hall","action":"set"},"args":{"state":"OFF"}}`,
			code: core.CodeUnknownField, path: "/steps/0/call/room"},
		{name: "trigger", trigger: `{"id":"m","state":{"area":"hall","property":"occupancy"},"to":true}`},
		{name: "trigger held", trigger: `{"id":"m","state":{"area":"hall","property":"occupancy"},"to":false,"for":"5m"}`},
		{name: "trigger nothing", trigger: `{"id":"m","state":{"area":"hall","property":"smoke"},"to":true}`,
			code: core.CodeNoMatch, path: "/triggers/0/state"},
		{name: "trigger by tag", trigger: `{"id":"m","state":{"tag":"class:occupancy","property":"occupancy"},"to":true}`},
		{name: "too many", step: strings.Repeat(`{"id":"s","call":{"type":"light","action":"set"},"args":{"state":"OFF"}},`, MaxSelectors) +
			`{"id":"off","call":{"type":"light","action":"set"},"args":{"state":"OFF"}}`,
			code: core.CodeConstraint, path: "/steps/32/call", msg: "at most 32 selectors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			step, trig := tt.step, tt.trigger
			if step == "" {
				step = `{"id":"on","call":"hall_light.set","args":{"state":"ON"}}`
			}
			if trig == "" {
				trig = `{"id":"at","at":"07:00"}`
			}
			src := `{"name":"sel","triggers":[` + trig + `],"steps":[` + numbered(step) + `]}`
			validateFinds(t, src, cat, tt.code, tt.path, tt.msg)
		})
	}
}

// TestSelectorPlanAndRun checks that the plan lists what a selector
// resolves to now with the most any of it may do, and that a run calls
// each action once, recorded in the step's calls and output.
func TestSelectorPlanAndRun(t *testing.T) {
	cat := taggedCatalog()
	tests := []struct {
		name, call, args string
		calls            []string
		risk             pilotage.Risk
	}{
		{"lights", `{"type":"light","action":"set"}`, `{"state":"OFF"}`, []string{"hall_light.set", "porch_light.set"}, pilotage.RiskControl},
		{"hall locks", `{"area":"hall","type":"lock","action":"set"}`, `{"state":"LOCK"}`, []string{"front_lock.set"}, pilotage.RiskSecurity},
		// Nothing now: planned at the type's risk, else control (the
		// engine refuses anything riskier that joins later).
		{"nothing", `{"area":"attic","action":"set"}`, `{"state":"OFF"}`, nil, pilotage.RiskControl},
		{"no lock yet", `{"area":"attic","type":"lock","action":"set"}`, `{"state":"LOCK"}`, nil, pilotage.RiskSecurity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := `{"name":"sel","triggers":[{"id":"m","state":{"area":"hall","property":"occupancy"},"to":true}],
			  "steps":[{"id":"go","call":` + tt.call + `,"args":` + tt.args + `},
			           {"id":"say","call":"notify.phone","args":{"message":"{{ trigger.entity }}"}}]}`
			res, err := Validate([]byte(src), cat, ValidateOptions{})
			if err != nil || !res.Valid {
				t.Fatalf("%v %+v", err, res.Diagnostics)
			}
			ps := res.Plan.Steps[slices.IndexFunc(res.Plan.Steps, func(s pilotage.PlanStep) bool { return s.ID == "go" })]
			if !slices.Equal(ps.Calls, tt.calls) || ps.Risk != tt.risk {
				t.Fatalf("plan step calls %v risk %s, want %v %s", ps.Calls, ps.Risk, tt.calls, tt.risk)
			}
			if !strings.Contains(res.Plan.Steps[1].Description, `"occupancy" of any device in area "hall" (now: hall_motion.occupancy)`) {
				t.Fatalf("trigger description %q", res.Plan.Steps[1].Description)
			}
			now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
			w := NewSimWorld(func(string) (any, bool) { return nil, false }, now, Scenario{}, nil)
			fire, err := FireFor(res.Compiled, Scenario{}, w)
			if err != nil {
				t.Fatal(err)
			}
			out := Run(context.Background(), res.Compiled, w, RunInput{Trigger: fire, Limits: DefaultLimits})
			if !out.Outcome.OK {
				t.Fatalf("run: %+v", out.Outcome)
			}
			var got []string
			for _, c := range w.Calls() {
				got = append(got, c.ID)
			}
			want := append(slices.Clone(tt.calls), "notify.phone")
			if !slices.Equal(got, want) {
				t.Fatalf("calls %v, want %v", got, want)
			}
			if msg := w.Calls()[len(got)-1].Args["message"]; msg != "hall_motion.occupancy" {
				t.Fatalf("trigger.entity = %v", msg)
			}
			if err := CheckCorrespondence(res.Plan, out.Steps, out.Outcome); err != nil {
				t.Fatal(err)
			}
			// A selector that called nothing says so in its step's output.
			goOut, _ := out.Steps[slices.IndexFunc(out.Steps, func(s pilotage.TraceStep) bool { return s.ID == "go" })].Output.(map[string]any)
			if _, noted := goOut["note"]; noted != (len(tt.calls) == 0) {
				t.Fatalf("step go's output %v: a note iff nothing matched", goOut)
			}
		})
	}
}

// numbered gives the steps of a list whose ids are all "s" distinct ids.
func numbered(steps string) string {
	for i := 0; strings.Contains(steps, `"id":"s",`); i++ {
		steps = strings.Replace(steps, `"id":"s",`, `"id":"s`+strconv.Itoa(i)+`",`, 1)
	}
	return steps
}

// validateFinds validates src against cat and returns its finding of
// code at path whose message holds msg; code "" wants it valid with no
// finding (and returns nil).
func validateFinds(t *testing.T, src string, cat Catalog, code, path, msg string) *pilotage.Diagnostic {
	t.Helper()
	res, err := Validate([]byte(src), cat, ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if code == "" {
		if !res.Valid || len(res.Diagnostics) > 0 {
			t.Fatalf("want valid with no finding, got %+v", res.Diagnostics)
		}
		return nil
	}
	for i, d := range res.Diagnostics {
		if d.Code == code && d.Path == path && strings.Contains(d.Message, msg) {
			return &res.Diagnostics[i]
		}
	}
	t.Fatalf("want %s at %s saying %q, got %+v", code, path, msg, res.Diagnostics)
	return nil
}
