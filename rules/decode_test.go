package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/decode"
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
)

func TestDecodeModel(t *testing.T) {
	raw := []byte(`{
  "name": "m", "mode": "parallel", "max": 4,
  "triggers": [
    {"id":"s","state":"a.b","from":"OFF","to":"ON","for":"PT1M"},
    {"id":"n","state":"a.p","above":1.5,"below":9},
    {"id":"e","event":"r.action","value":"on"},
    {"id":"c","cron":"30 7 * * *"},
    {"id":"t","at":"07:30:15"},
    {"id":"u","sun":"sunset","offset":"-15m"}
  ],
  "conditions": [{"id":"k","expr":"{{ trigger.id == 's' }}"}],
  "steps": [
    {"id":"call","call":"x.set","args":{"n":3,"obj":{"a":[1,"{{ params.v }}"]},"txt":"Hé {{ trigger.id }}!\n{{ 1+1 }}"}},
    {"id":"d","delay":"{{ params.hold }}"},
    {"id":"w","wait":{"event":"r.action","value":"off"},"timeout":"1m","continue_on_timeout":true},
    {"id":"i","if":"true","then":[{"id":"i1","stop":"x"}],"else":[{"id":"i2","stop":"y","error":true}]},
    {"id":"ch","choose":[{"when":"true","do":[]},{"label":"named","when":"false","do":[{"id":"c1","set":{"v":"{{ 2 }}"}}]}],"default":[]},
    {"id":"r","repeat":{"for_each":"trigger.value","max":9},"do":[]},
    {"id":"r2","repeat":{"count":"{{ params.n }}"},"do":[]}
  ]
}`)
	p, ds, err := decode.Decode(raw, Limits{})
	if err != nil || len(ds) != 0 {
		t.Fatalf("err %v diags %s", err, diagString(ds))
	}
	tr := p.Triggers
	check := func(what string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("mode", p.Mode, ModeParallel)
	check("max", p.Max, 4)
	check("kinds", []model.TriggerKind{tr[0].Kind, tr[1].Kind, tr[2].Kind, tr[3].Kind, tr[4].Kind, tr[5].Kind},
		[]model.TriggerKind{TriggerState, TriggerNumeric, TriggerEvent, TriggerCron, TriggerTime, TriggerSun})
	check("state", []any{tr[0].Entity, tr[0].From, tr[0].To, tr[0].For}, []any{"a.b", model.Value{Set: true, V: "OFF"}, model.Value{Set: true, V: "ON"}, time.Minute})
	check("numeric", []float64{*tr[1].Above, *tr[1].Below}, []float64{1.5, 9})
	check("event", []any{tr[2].Entity, tr[2].To}, []any{"r.action", model.Value{Set: true, V: "on"}})
	check("cron/at/sun", []any{tr[3].Cron, tr[4].At, tr[5].Sun, tr[5].Offset}, []any{"30 7 * * *", "07:30:15", "sunset", -15 * time.Minute})
	check("ptr", tr[5].Ptr, "/triggers/5")
	check("condition", p.Conditions[0].Expr.Src, "trigger.id == 's'")
	check("condition offset", p.Conditions[0].Expr.Offset, 3)

	s := p.Steps
	args := s[0].Args
	check("const arg", args["n"].IsConst && args["n"].Const == 3.0, true)
	check("nested template", args["obj"].Object["a"].Array[1].Whole.Src, "params.v")
	check("nested ptr", args["obj"].Object["a"].Array[1].Ptr, "/steps/0/args/obj/a/1")
	txt := args["txt"]
	if len(txt.Parts) != 4 || txt.Parts[0].Text != "Hé " || txt.Parts[1].Expr.Offset != 6 || txt.Parts[3].Expr.Offset != 24 {
		t.Errorf("interpolation parts %+v", txt.Parts)
	}
	check("delay", s[1].Delay.Whole.Src, "params.hold")
	check("wait", []any{s[2].Wait.Event, s[2].Wait.To, s[2].Timeout, s[2].ContinueOnTimeout}, []any{"r.action", model.Value{Set: true, V: "off"}, time.Minute, true})
	check("if", []any{s[3].If.Src, s[3].Then[0].Stop, s[3].Else[0].Error}, []any{"true", "x", true})
	check("labels", []string{s[4].Choose[0].Label, s[4].Choose[1].Label}, []string{"arm1", "named"})
	check("for_each expr", s[5].Repeat.ForEach.Whole.Src, "trigger.value")
	check("repeat max", s[5].Repeat.Max, 9)
	check("count", s[6].Repeat.Count.Whole.Src, "params.n")

	// Evaluating the decoded templates uses the same Template contract
	// as the interpreter.
	v, err := txt.Eval(&model.Env{Trigger: map[string]any{"id": "s"}})
	check("interpolated", v, "Hé s!\n2")
	if err != nil {
		t.Error(err)
	}
}

func TestCompileTemplate(t *testing.T) {
	tpl, err := decode.CompileTemplate("/x", map[string]any{"a": "{{ 1 + 1 }}", "b": []any{"k", 2.0}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := tpl.Eval(&model.Env{})
	if err != nil || fmt.Sprint(v) != "map[a:2 b:[k 2]]" {
		t.Errorf("got %v, %v", v, err)
	}
	_, err = decode.CompileTemplate("/y", "ok {{ nope( }}", 0)
	var ee *decode.ExprError
	if !errors.As(err, &ee) || ee.Ptr != "/y" || ee.From < 6 {
		t.Errorf("got %#v", err)
	}
	if _, err := decode.CompileTemplate("/z", "{{ unclosed", 0); err == nil {
		t.Error("unclosed {{ accepted")
	}
}

func TestExpressionRange(t *testing.T) {
	src := prog(`[{"id":"x","call":"notify.phone","args":{"message":"line one\nné {{ state('hall_motion.ocupancy') }}"}}]`)
	res, err := Validate([]byte(src), demoCatalog(), ValidateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Diagnostics) != 1 {
		t.Fatalf("got %s", diagString(res.Diagnostics))
	}
	d := res.Diagnostics[0]
	want := pilotage.Range{Start: pilotage.Position{Line: 2, Column: 13}, End: pilotage.Position{Line: 2, Column: 35}}
	if d.Code != core.CodeUnknownName || d.Range == nil || *d.Range != want || d.Hint != `did you mean "hall_motion.occupancy"?` {
		t.Errorf("got %+v range %+v", d, d.Range)
	}
}

func TestLimits(t *testing.T) {
	deep := prog(strings.Repeat(`[{"id":"i","if":"true","then":`, 20) + "[]" + strings.Repeat("}]", 20))
	manyExpr := prog(`[{"id":"x","if":"` + strings.Repeat("1 + ", 300) + `1","then":[]}]`)
	longExpr := prog(`[{"id":"x","if":"'` + strings.Repeat("a", 3000) + `' == ''","then":[]}]`)
	for _, tc := range []struct {
		name string
		src  string
		lim  Limits
	}{
		{"bytes", prog(`[{"id":"x","stop":"` + strings.Repeat("a", 2000) + `"}]`), Limits{MaxProgramBytes: 1000}},
		{"nodes", prog(`[{"id":"x","call":"notify.phone","args":{"message":[` + strings.Repeat("1,", 200) + `1]}}]`), Limits{MaxNodes: 100}},
		{"step_depth", deep, Limits{}},
		{"json_depth", strings.Repeat("[", 5000) + strings.Repeat("]", 5000), Limits{}},
		{"expr_nodes", manyExpr, Limits{}},
		{"expr_len", longExpr, Limits{}},
		{"wall", prog(`[{"id":"x","stop":""}]`), Limits{ValidateWall: time.Nanosecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Validate([]byte(tc.src), demoCatalog(), ValidateOptions{Limits: tc.lim})
			var re *pilotage.RequestError
			if !errors.As(err, &re) || re.Kind != pilotage.ErrResourceExhausted {
				t.Fatalf("got %v, want resource_exhausted", err)
			}
			if _, _, err := decode.Decode([]byte(tc.src), tc.lim); err == nil && tc.name != "wall" {
				t.Errorf("Decode accepted it")
			}
		})
	}
}

func TestValidResultCompiled(t *testing.T) {
	g, _ := GuideByID("cookbook")
	src := guidePrograms(g.Body)[4] // remote scenes: event trigger, choose
	res, err := Validate([]byte(src), demoCatalog(), ValidateOptions{Automation: func(string) (*Compiled, bool) { return nil, false }})
	if err != nil || !res.Valid {
		t.Fatalf("%v %s", err, diagString(res.Diagnostics))
	}
	c := res.Compiled
	want := "bedroom_remote.action,hall_light.brightness,hall_light.set"
	if strings.Join(c.Refs, ",") != want {
		t.Errorf("refs %v, want %s", c.Refs, want)
	}
	for _, r := range c.Refs {
		if c.Entry(r) == nil {
			t.Errorf("no entry for %s", r)
		}
	}
	if c.Plan != res.Plan || res.CatalogVersion != "demo-1" || strings.Contains(string(c.Raw), "\n") || !json.Valid(c.Raw) {
		t.Errorf("compiled %+v", c)
	}
}

func TestAutomationSub(t *testing.T) {
	body, err := Validate([]byte(prog(`[{"id":"x","stop":""}]`)), demoCatalog(), ValidateOptions{})
	if err != nil || !body.Valid {
		t.Fatal(err)
	}
	res, err := Validate([]byte(prog(`[{"id":"x","call":"script.flash_porch","args":{"times":2}}]`)), demoCatalog(),
		ValidateOptions{Automation: func(id string) (*Compiled, bool) { return body.Compiled, id == "script.flash_porch" }})
	if err != nil || !res.Valid {
		t.Fatalf("%v %s", err, diagString(res.Diagnostics))
	}
	if res.Compiled.Sub["script.flash_porch"] != body.Compiled {
		t.Error("sub body not resolved")
	}
	last := res.Plan.Steps[len(res.Plan.Steps)-1]
	if last.Risk != pilotage.RiskControl || len(last.Calls) != 1 {
		t.Errorf("automation call step %+v", last)
	}
	bad, _ := Validate([]byte(prog(`[{"id":"x","call":"script.flash_porch","args":{"times":20}}]`)), demoCatalog(), ValidateOptions{})
	if bad.Valid || bad.Diagnostics[0].Code != core.CodeBadArguments || bad.Diagnostics[0].Path != "/steps/0/args/times" {
		t.Errorf("got %s", diagString(bad.Diagnostics))
	}
}
