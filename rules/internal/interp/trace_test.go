package interp

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"

	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
)

func TestTraceAt(t *testing.T) {
	big := strings.Repeat("x", 300)
	steps := []pilotage.TraceStep{
		{ID: "a", Input: map[string]any{"k": 1}, Output: map[string]any{"small": true}, Outcome: pilotage.Outcome{OK: true, Status: core.StepSuccess}},
		{ID: "b", Input: 1, Output: big, Outcome: pilotage.Outcome{OK: true, Status: core.StepSuccess}},
		{ID: "c", Output: strings.Repeat("é", 300), Outcome: pilotage.Outcome{OK: true, Status: core.StepSuccess}},
	}
	if got := TraceAt(steps, pilotage.LevelFull); got.Level != "full" || !reflect.DeepEqual(got.Steps, steps) {
		t.Errorf("full = %+v", got)
	}
	if got := TraceAt(steps, pilotage.LevelNone); got != nil {
		t.Errorf("none = %+v", got)
	}
	sum := TraceAt(steps, pilotage.LevelSummary)
	if sum.Level != "summary" {
		t.Fatalf("level %q", sum.Level)
	}
	for _, s := range sum.Steps {
		if s.Input != nil {
			t.Errorf("%s: summary keeps input", s.ID)
		}
	}
	if !reflect.DeepEqual(sum.Steps[0].Output, steps[0].Output) {
		t.Errorf("small output changed: %v", sum.Steps[0].Output)
	}
	want := map[string]any{"truncated": true, "bytes": 302, "preview": `"` + strings.Repeat("x", 199)}
	if !reflect.DeepEqual(sum.Steps[1].Output, want) {
		t.Errorf("truncated = %#v", sum.Steps[1].Output)
	}
	tr := sum.Steps[2].Output.(map[string]any)
	if tr["bytes"] != 602 || len([]rune(tr["preview"].(string))) != 200 {
		t.Errorf("multi-byte truncation = %v bytes, %d runes", tr["bytes"], len([]rune(tr["preview"].(string))))
	}
	if steps[1].Input == nil || steps[1].Output != big {
		t.Error("TraceAt modified its argument")
	}
	if got, _ := json.Marshal(TraceAt(nil, pilotage.LevelFull)); string(got) != `{"level":"full","steps":[]}` {
		t.Errorf("empty trace = %s", got)
	}
}

func TestBaseStepID(t *testing.T) {
	for in, want := range map[string]string{
		"step": "step", "step#2": "step", "step#2#4": "step", "call1#2/body#3": "body", "a#1/b/c#2#3": "c",
	} {
		if got := BaseStepID(in); got != want {
			t.Errorf("BaseStepID(%q) = %q, want %q", in, got, want)
		}
	}
}

// A plan with a trigger branch, a condition, an if with both arms, a loop
// with a plain body step and a branch inside it.
var corrPlan = &pilotage.Plan{Steps: []pilotage.PlanStep{
	{ID: "triggers", Kind: "trigger"},
	{ID: "t1", Arm: &pilotage.Arm{Branch: "triggers", Label: "t1"}},
	{ID: "t2", Arm: &pilotage.Arm{Branch: "triggers", Label: "t2"}},
	{ID: "c"},
	{ID: "call", Calls: []string{"x.set"}},
	{ID: "b"},
	{ID: "yes", Arm: &pilotage.Arm{Branch: "b", Label: "then"}},
	{ID: "no", Arm: &pilotage.Arm{Branch: "b", Label: "else"}},
	{ID: "L"},
	{ID: "body", Loop: "L"},
	{ID: "ib", Loop: "L"},
	{ID: "ia", Arm: &pilotage.Arm{Branch: "ib", Label: "then"}, Loop: "L"},
}}

func corrEntry(id string, took ...string) pilotage.TraceStep {
	e := pilotage.TraceStep{ID: id}
	for _, tk := range took {
		e.Decisions = append(e.Decisions, pilotage.Decision{At: id, Took: tk})
	}
	return e
}

func TestCheckCorrespondence(t *testing.T) {
	okRun := pilotage.Outcome{OK: true, Status: core.StatusSuccess}
	failed := pilotage.Outcome{Status: core.StatusFailed}
	full := []pilotage.TraceStep{
		corrEntry("triggers", "t1"), corrEntry("t1"), corrEntry("c"), {ID: "call", Calls: []string{"x.set"}},
		corrEntry("b", "else"), corrEntry("no"), corrEntry("L", "continue", "continue", "exit"),
		corrEntry("body#1"), corrEntry("ib#1", "else"), corrEntry("body#2"), corrEntry("ib#2", "then"), corrEntry("ia#2"),
		corrEntry("call/inner#1"), corrEntry("call/yes"),
	}
	zeroLoop := []pilotage.TraceStep{
		corrEntry("triggers", "t2"), corrEntry("t2"), corrEntry("c"), {ID: "call", Calls: []string{"x.set"}},
		corrEntry("b", "then"), corrEntry("yes"), corrEntry("L", "exit"),
	}
	tests := []struct {
		name    string
		tr      []pilotage.TraceStep
		outcome pilotage.Outcome
		errPart string // "" = corresponds
	}{
		{"complete success", full, okRun, ""},
		{"zero-iteration loop", zeroLoop, okRun, ""},
		{"partial failure", full[:5], failed, ""},
		{"conditions not met", full[:3], pilotage.Outcome{OK: true, Status: core.StatusConditionsNotMet}, ""},
		{"missing expected on success", full[:5], okRun, `expected step "no" is missing`},
		{"loop body missing on success", append(append([]pilotage.TraceStep{}, full[:7]...), corrEntry("ib#1", "else")), okRun, `expected step "body" is missing`},
		{"unselected arm present", append(append([]pilotage.TraceStep{}, zeroLoop...), corrEntry("no")), okRun, `step "no" of unselected arm b:else`},
		{"unselected trigger present", append(append([]pilotage.TraceStep{}, zeroLoop...), corrEntry("t1")), failed, `step "t1" of unselected arm`},
		{"body of unexecuted loop in failed run", append(append([]pilotage.TraceStep{}, zeroLoop...), corrEntry("body#1")), failed, `trace entry "body#1" is not in the expected set`},
		{"unknown step", append(append([]pilotage.TraceStep{}, full[:3]...), corrEntry("ghost")), failed, `"ghost" is not in the expected set`},
		{"duplicate id", append(append([]pilotage.TraceStep{}, full...), corrEntry("body#2")), okRun, `"body#2" appears more than once`},
		{"undeclared call", []pilotage.TraceStep{corrEntry("triggers", "t1"), corrEntry("t1"), corrEntry("c"), {ID: "call", Calls: []string{"y.set"}}}, failed, `calls "y.set"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckCorrespondence(corrPlan, tt.tr, tt.outcome)
			switch {
			case tt.errPart == "" && err != nil:
				t.Errorf("unexpected: %v", err)
			case tt.errPart != "" && (err == nil || !strings.Contains(err.Error(), tt.errPart)):
				t.Errorf("err = %v, want it to mention %q", err, tt.errPart)
			}
		})
	}
}
