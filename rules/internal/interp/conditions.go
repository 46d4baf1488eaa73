package interp

// The program's conditions, and the if and choose steps that test one.

import (
	"fmt"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

func (r *interp) condition(f *frame, cond *model.RunCond, skip bool) *halt {
	i, h := r.begin(cond.ID)
	if h != nil {
		return h
	}
	if skip {
		r.setOutcome(i, core.StepSkipped, "")
		return nil
	}
	why := ""
	if cond.Expr != nil {
		if id := model.UnavailableRead(cond.Expr, r.w); id != "" {
			why = id + " is unavailable (its device is offline), so the condition does not hold"
		}
	}
	b := false
	if why == "" {
		var h *halt
		if b, h = r.conditionHolds(f, cond); h != nil {
			return r.fail(i, h)
		}
	}
	if cond.Expr != nil {
		if h := r.noteReads(i, cond.ID, readsInto(nil, cond.Expr, f.env, r.w)); h != nil {
			return r.fail(i, h)
		}
	}
	r.steps[i].Output = b
	f.env.SetStepOutput(cond.ID, b)
	if !b {
		r.setOutcome(i, core.StepNotMet, why)
		return &halt{core.StatusConditionsNotMet, cond.ID}
	}
	r.setOutcome(i, core.StepSuccess, "")
	return nil
}

// conditionHolds evaluates a condition: its expression, or its time or
// sun window at the world's clock (the entry's input then says how the
// window stood that day).
func (r *interp) conditionHolds(f *frame, cond *model.RunCond) (bool, *halt) {
	if cond.Window == nil {
		b, err := cond.Expr.EvalBool(f.env)
		if err != nil {
			return false, exprHalt(cond.ID, err)
		}
		return b, nil
	}
	b, in, err := cond.Window.Eval(r.w.Now(), model.PlaceOf(r.w))
	if h := r.record(cond.ID, "the condition's input", in); h != nil {
		return false, h
	}
	r.steps[len(r.steps)-1].Input = in
	if err != nil {
		return false, &halt{core.StatusFailed, fmt.Sprintf("condition %q: %v", cond.ID, err)}
	}
	return b, nil
}

// branch runs an if or choose step: one decision, then the selected arm.
func (r *interp) branch(f *frame, s *model.RunStep, qid, sfx string, i int) *halt {
	var (
		took, because string
		arm           []model.RunStep
		reads         map[string]any
	)
	if x, ok := s.More.(*model.IfStep); ok {
		b, why, err := r.branchCond(f, x.Cond)
		reads = readsInto(reads, x.Cond, f.env, r.w)
		if err != nil {
			_ = r.noteReads(i, qid, reads) // the entry fails with err either way
			return r.fail(i, exprHalt(qid, err))
		}
		took, arm = model.LabelElse, x.Els
		if b {
			took, arm = model.LabelThen, x.Then
		}
		because = why
	} else {
		x := s.More.(*model.ChooseStep)
		took, arm, because = model.LabelDefault, x.Def, fmt.Sprintf("no arm matched (%d checked)", len(x.Arms))
		for _, a := range x.Arms {
			b, _, err := r.branchCond(f, a.When)
			reads = readsInto(reads, a.When, f.env, r.w)
			if err != nil {
				_ = r.noteReads(i, qid, reads) // the entry fails with err either way
				return r.fail(i, exprHalt(qid, err))
			}
			if b {
				took, arm, because = a.Label, a.Do, a.When.Src+" = true"
				break
			}
		}
	}
	if h := r.noteReads(i, qid, reads); h != nil {
		return r.fail(i, h)
	}
	r.steps[i].Decisions = []pilotage.Decision{{At: qid, Took: took, Because: because}}
	if h := r.nested(f, qid, arm, sfx); h != nil {
		return r.fail(i, h)
	}
	r.setOutcome(i, core.StepSuccess, "")
	return nil
}
