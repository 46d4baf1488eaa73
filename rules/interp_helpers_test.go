package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Builders for hand-made programs (the interpreter's tests do not depend on
// the decoder). Names start with "it" to stay out of other test files' way.

var itStart = time.Date(2026, 1, 15, 22, 0, 0, 0, time.UTC)

// itCache is the Cache the tests share, as an engine's validations and
// runs do.
var itCache = NewCache()

func itExpr(src string) *model.Expr {
	x, err := model.CompileExpr(src, 0)
	if err != nil {
		panic("itExpr " + src + ": " + err.Error())
	}
	return x
}

func itConst(v any) *model.Template { return &model.Template{IsConst: true, Const: v} }
func itTpl(src string) *model.Template {
	return &model.Template{Whole: itExpr(src)}
}

func itArgs(kv ...any) map[string]*model.Template {
	m := map[string]*model.Template{}
	for i := 0; i+1 < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case *model.Template:
			m[kv[i].(string)] = v
		default:
			m[kv[i].(string)] = itConst(v)
		}
	}
	return m
}

func itCall(id, target string, kv ...any) *model.Step {
	return &model.Step{ID: id, Kind: model.StepCall, Call: target, Args: itArgs(kv...)}
}
func itDelay(id, d string) *model.Step {
	return &model.Step{ID: id, Kind: model.StepDelay, Delay: itConst(d)}
}
func itWait(id, state string, to any, timeout time.Duration, cont bool) *model.Step {
	return &model.Step{ID: id, Kind: model.StepWait, Wait: &model.WaitSpec{State: state, To: model.Value{Set: true, V: to}}, Timeout: timeout, ContinueOnTimeout: cont}
}
func itIf(id, cond string, then, els []*model.Step) *model.Step {
	return &model.Step{ID: id, Kind: model.StepIf, If: itExpr(cond), Then: then, Else: els}
}
func itArm(label, when string, do ...*model.Step) *model.Arm {
	return &model.Arm{Label: label, When: itExpr(when), Do: do}
}
func itChoose(id string, def []*model.Step, arms ...*model.Arm) *model.Step {
	return &model.Step{ID: id, Kind: model.StepChoose, Choose: arms, Default: def}
}
func itCount(id string, n any, do ...*model.Step) *model.Step {
	t, ok := n.(*model.Template)
	if !ok {
		t = itConst(n)
	}
	return &model.Step{ID: id, Kind: model.StepRepeat, Repeat: &model.RepeatSpec{Count: t}, Do: do}
}
func itWhile(id, cond string, max int, do ...*model.Step) *model.Step {
	return &model.Step{ID: id, Kind: model.StepRepeat, Repeat: &model.RepeatSpec{While: itExpr(cond), Max: max}, Do: do}
}
func itUntil(id, cond string, max int, do ...*model.Step) *model.Step {
	return &model.Step{ID: id, Kind: model.StepRepeat, Repeat: &model.RepeatSpec{Until: itExpr(cond), Max: max}, Do: do}
}
func itForEach(id string, list *model.Template, do ...*model.Step) *model.Step {
	return &model.Step{ID: id, Kind: model.StepRepeat, Repeat: &model.RepeatSpec{ForEach: list}, Do: do}
}
func itSet(id string, kv ...any) *model.Step {
	return &model.Step{ID: id, Kind: model.StepSet, Set: itArgs(kv...)}
}
func itStop(id, reason string, isErr bool) *model.Step {
	return &model.Step{ID: id, Kind: model.StepStop, Stop: reason, Error: isErr}
}

func itState(id, entity string, to any) *model.Trigger {
	return &model.Trigger{ID: id, Kind: TriggerState, Entity: entity, To: model.Value{Set: true, V: to}}
}
func itCond(id, src string) *model.Condition { return &model.Condition{ID: id, Expr: itExpr(src)} }

// itCompile lowers a program into its run form, with the plan itPlan
// derives.
func itCompile(p *model.Program) *Compiled {
	c := &Compiled{Plan: itPlan(p)}
	c.Form = model.Lower(p, &model.Interner{K: itCache, Entry: c.Entry})
	return c
}

// itEntry adds a referenced entry to c, keeping Refs sorted and Entries
// beside them.
func itEntry(c *Compiled, e *pilotage.Entry) {
	i, found := slices.BinarySearch(c.Refs, e.ID)
	if found {
		c.Entries[i] = e
		return
	}
	c.Refs = slices.Insert(c.Refs, i, e.ID)
	c.Entries = slices.Insert(c.Entries, i, e)
}

func itProgram(triggers []*model.Trigger, conds []*model.Condition, steps ...*model.Step) *Compiled {
	return itCompile(&model.Program{Name: "t", Triggers: triggers, Conditions: conds, Steps: steps})
}

// itPlan derives a plan the way the validator does (a hand-written stand-in
// used where Validate is not involved): the "triggers" branch with one arm
// per trigger, the conditions, then the body.
func itPlan(p *model.Program) *pilotage.Plan {
	pl := &pilotage.Plan{MaxRisk: pilotage.RiskRead, MaxRiskHints: pilotage.RiskHints{ReadOnly: true}}
	add := func(ps pilotage.PlanStep) {
		ps.Risk = pilotage.RiskRead
		ps.RiskHints = pilotage.HintsOf(pilotage.RiskRead)
		pl.Steps = append(pl.Steps, ps)
	}
	if len(p.Triggers) > 0 {
		add(pilotage.PlanStep{ID: TriggersStepID, Kind: "trigger"})
		for _, t := range p.Triggers {
			add(pilotage.PlanStep{ID: t.ID, Kind: "trigger", Arm: &pilotage.Arm{Branch: TriggersStepID, Label: t.ID}})
		}
	}
	for _, c := range p.Conditions {
		add(pilotage.PlanStep{ID: c.ID, Kind: "condition"})
	}
	var walk func(steps []*model.Step, arm *pilotage.Arm, loop string)
	walk = func(steps []*model.Step, arm *pilotage.Arm, loop string) {
		for _, s := range steps {
			ps := pilotage.PlanStep{ID: s.ID, Kind: string(s.Kind), Arm: arm, Loop: loop}
			if s.Kind == model.StepCall {
				ps.Calls = []string{s.Call}
			}
			add(ps)
			walk(s.Then, &pilotage.Arm{Branch: s.ID, Label: model.LabelThen}, loop)
			walk(s.Else, &pilotage.Arm{Branch: s.ID, Label: model.LabelElse}, loop)
			for _, a := range s.Choose {
				walk(a.Do, &pilotage.Arm{Branch: s.ID, Label: a.Label}, loop)
			}
			walk(s.Default, &pilotage.Arm{Branch: s.ID, Label: model.LabelDefault}, loop)
			if s.Kind == model.StepRepeat {
				walk(s.Do, nil, s.ID)
			}
		}
	}
	walk(p.Steps, nil, "")
	return pl
}

// itSim is a SimWorld over a fixed base state.
func itSim(base map[string]any, sc Scenario) *SimWorld {
	return NewSimWorld(func(id string) (any, bool) { v, ok := base[id]; return v, ok }, itStart, sc, nil)
}

// itRun runs c and checks the invariants every trace must keep.
func itRun(t testing.TB, c *Compiled, w model.World, in RunInput) *RunResult {
	t.Helper()
	res := Run(context.Background(), c, w, in)
	itCheckResult(t, c.Plan, res)
	return res
}

func itCheckResult(t testing.TB, plan *pilotage.Plan, res *RunResult) {
	t.Helper()
	if res == nil {
		t.Fatal("Run returned nil")
	}
	if _, ok := LookupStatus(RunStatuses, res.Outcome.Status); !ok {
		t.Errorf("run status %q not in RunStatuses", res.Outcome.Status)
	}
	if info, _ := LookupStatus(RunStatuses, res.Outcome.Status); info.OK != res.Outcome.OK {
		t.Errorf("run outcome %+v: ok disagrees with the table", res.Outcome)
	}
	last := -1.0
	seen := map[string]bool{}
	for _, s := range res.Steps {
		if s.Parent != "" && !seen[s.Parent] {
			t.Errorf("step %q: parent %q is not an earlier entry", s.ID, s.Parent)
		}
		seen[s.ID] = true
		info, ok := LookupStatus(core.StepStatuses, s.Outcome.Status)
		if !ok || info.OK != s.Outcome.OK {
			t.Errorf("step %q outcome %+v not a closed step status", s.ID, s.Outcome)
		}
		if s.TMs == nil || *s.TMs < last {
			t.Errorf("step %q: t_ms missing or decreasing", s.ID)
		} else {
			last = *s.TMs
		}
	}
	if err := CheckCorrespondence(plan, res.Steps, res.Outcome); err != nil {
		t.Errorf("correspondence: %v\ntrace: %s", err, itIDs(res.Steps))
	}
	for _, lvl := range []string{pilotage.LevelFull, pilotage.LevelSummary} {
		if _, err := json.Marshal(TraceAt(res.Steps, lvl)); err != nil {
			t.Errorf("trace at %s does not encode: %v", lvl, err)
		}
	}
}

func itIDs(steps []pilotage.TraceStep) []string {
	ids := make([]string, len(steps))
	for i, s := range steps {
		ids[i] = s.ID
	}
	return ids
}

func itStep(t testing.TB, res *RunResult, id string) pilotage.TraceStep {
	t.Helper()
	for _, s := range res.Steps {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no trace entry %q in %v", id, itIDs(res.Steps))
	return pilotage.TraceStep{}
}

func itFire(id string, v any) RunInput {
	return RunInput{Trigger: TriggerFire{ID: id, Value: v}}
}
