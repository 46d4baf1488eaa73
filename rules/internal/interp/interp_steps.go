package interp

import (
	"fmt"
	"reflect"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// evalArgs evaluates named templates in name order, each recorded as it
// is made (the step's trace entry holds them): what (e.g. "setting %q")
// names one in a message.
func (r *interp) evalArgs(f *frame, qid, what string, args []model.NamedTemplate) (map[string]any, *halt) {
	out := make(map[string]any, len(args))
	for _, a := range args {
		v, err := a.Tmpl.Eval(f.env)
		if err != nil {
			return nil, exprHalt(qid, err)
		}
		if h := r.recordf(qid, v, what, a.Name); h != nil {
			return nil, h
		}
		out[a.Name] = v
	}
	return out, nil
}

// paramID is the catalog id a catalog-reference param holds in this
// frame (a promoted automation's: its caller passed it, checked when the
// caller was validated).
func paramID(f *frame, name, qid string) (string, *halt) {
	if id, ok := f.env.Params[name].(string); ok && id != "" {
		return id, nil
	}
	return "", &halt{core.StatusFailed, fmt.Sprintf("step %q: catalog param %q is not bound to an id", qid, name)}
}

func (r *interp) delay(f *frame, s *model.RunStep, qid string, i int) *halt {
	d, h := r.duration(f, s.More.(*model.DurSpec), qid, "delay")
	if h != nil {
		return r.fail(i, h)
	}
	r.steps[i].Input = map[string]any{"duration": d.String()}
	capped := false
	if rem := r.deadline.Sub(r.w.Now()); d > rem {
		d, capped = max(rem, 0), true
	}
	if err := r.w.Sleep(r.ctx, d); err != nil {
		if r.ctx.Err() != nil {
			return r.fail(i, r.ctxHalt("during", qid))
		}
		return r.fail(i, &halt{core.StatusFailed, fmt.Sprintf("step %q: delay failed: %v", qid, err)})
	}
	if capped {
		return r.fail(i, r.wallHalt(qid))
	}
	r.setOutcome(i, core.StepSuccess, "")
	return nil
}

// duration is a delay's or a wait's hold duration: parsed once when it is
// constant, else evaluated.
func (r *interp) duration(f *frame, ds *model.DurSpec, qid, what string) (time.Duration, *halt) {
	if ds.Constant {
		return ds.Dur, nil
	}
	v, err := ds.Tmpl.Eval(f.env)
	if err != nil {
		return 0, exprHalt(qid, err)
	}
	d, err := clock.DurationValue(v)
	if err != nil {
		return 0, &halt{core.StatusFailed, fmt.Sprintf("step %q: %s: %v", qid, what, err)}
	}
	return d, nil
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

func (r *interp) set(f *frame, s *model.RunStep, qid string, i int) *halt {
	vals, h := r.evalArgs(f, qid, "setting %q", s.Vals)
	if h != nil {
		return r.fail(i, h)
	}
	for _, a := range s.Vals {
		k := a.Name
		c, h := r.storedValue(qid, k, vals[k])
		if h == nil {
			h = r.setValueFits(f, qid, k, c)
		}
		if h != nil {
			return r.fail(i, h)
		}
		vals[k] = c
	}
	for k, v := range vals {
		f.env.VarsMap()[k] = v
	}
	r.steps[i].Output = jsonSafeFresh(vals)
	f.env.SetStepOutput(s.ID, vals)
	r.setOutcome(i, core.StepSuccess, "")
	return nil
}

func (r *interp) stop(f *frame, s *model.RunStep, qid string, i int) *halt {
	if s.Text != "" {
		r.chargeText(len(s.Text))
		r.steps[i].Output = map[string]any{"reason": s.Text}
	}
	if s.Flags&model.StopError != 0 {
		msg := s.Text
		if msg == "" {
			msg = fmt.Sprintf("stopped with error at step %q", qid)
		}
		return r.fail(i, &halt{core.StatusFailed, msg})
	}
	r.setOutcome(i, core.StepStopped, "")
	return &halt{core.StatusStopped, s.Text}
}

// interpEqual compares JSON-ish values: numbers by value, the rest deeply.
func interpEqual(a, b any) bool {
	if x, ok := core.InterpNumber(a); ok {
		y, ok := core.InterpNumber(b)
		return ok && x == y
	}
	return reflect.DeepEqual(a, b)
}

func interpAppendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// storedValue is the copy of v a set step stores under name: an expression
// may return one of the run's own live maps (vars, steps, $env), and a
// variable holding the map it lives in would make every later encoding of
// the run recurse forever. The copy is JSON-safe and bounded: at most
// MaxValueDepth deep, and all set steps of a run together store at most
// MaxSetValues JSON values.
func (r *interp) storedValue(qid, name string, v any) (any, *halt) {
	c, ok := r.copyValue(jsonSafeScalar(v), 1)
	if !ok {
		if r.setValues > r.lim.MaxSetValues {
			return nil, &halt{core.StatusLimitExceeded, fmt.Sprintf("step %q: setting %q would make this run store more than %d JSON values through set steps", qid, name, r.lim.MaxSetValues)}
		}
		return nil, &halt{core.StatusLimitExceeded, fmt.Sprintf("step %q: the value of %q is nested more than %d levels deep", qid, name, core.MaxValueDepth)}
	}
	return c, nil
}

// copyValue deep-copies a JSON-safe value, counting its JSON values
// against the run's budget; false when the budget or the depth runs out.
func (r *interp) copyValue(v any, depth int) (any, bool) {
	if r.setValues++; r.setValues > r.lim.MaxSetValues || depth > core.MaxValueDepth {
		return nil, false
	}
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, ok := r.copyValue(jsonSafeScalar(e), depth+1)
			if !ok {
				return nil, false
			}
			out[k] = c
		}
		return out, true
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, ok := r.copyValue(jsonSafeScalar(e), depth+1)
			if !ok {
				return nil, false
			}
			out[i] = c
		}
		return out, true
	}
	return v, true
}

// jsonSafeScalar is jsonSafe for everything but the two JSON container
// types, which it returns as they are (copyValue walks them itself, so a
// container that holds itself is never walked without a bound).
func jsonSafeScalar(v any) any {
	switch v.(type) {
	case map[string]any, []any:
		return v
	}
	return jsonSafe(v)
}
