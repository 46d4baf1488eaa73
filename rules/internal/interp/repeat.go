package interp

// The repeat step: count, while, until and for_each loops.

import (
	"fmt"
	"reflect"
	"strconv"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// Loop decisions (spec §5.8.2): one per continue-or-exit evaluation.
const (
	TookContinue = "continue"
	TookExit     = "exit"
)

// loopState decides, before iteration n (1-based), whether a repeat step
// continues.
type loopState struct {
	spec  *model.RepeatStep
	count int   // count loops
	items []any // for_each loops
}

// repeat runs one activation of a repeat step: a single trace entry that
// collects a decision per evaluation, and body entries qualified "#n".
// vars.index (1-based) is visible in every loop body, vars.item in for_each
// bodies; the enclosing values are restored when the loop ends.
func (r *interp) repeat(f *frame, s *model.RunStep, qid, sfx string, i int) *halt {
	ls, h := r.loopStart(f, s.More.(*model.RepeatStep), qid)
	if h != nil {
		return r.fail(i, h)
	}
	restore := saveVars(f.env.VarsMap(), "index", "item")
	defer restore()
	n := 1
	for ; ; n++ {
		cont, because, h := r.loopDecide(f, ls, qid, n)
		if h != nil {
			return r.fail(i, h)
		}
		if !cont {
			r.decide(i, qid, TookExit, because)
			break
		}
		if n > r.lim.MaxIterations {
			return r.fail(i, &halt{core.StatusLimitExceeded, fmt.Sprintf("step %q: loop exceeded %d iterations", qid, r.lim.MaxIterations)})
		}
		r.decide(i, qid, TookContinue, because)
		f.env.VarsMap()["index"] = n
		if ls.items != nil {
			f.env.VarsMap()["item"] = ls.items[n-1]
		}
		if h := r.nested(f, qid, ls.spec.Do, sfx+"#"+strconv.Itoa(n)); h != nil {
			r.current = qid
			return r.fail(i, h)
		}
	}
	out := map[string]any{"iterations": n - 1}
	r.steps[i].Output = out
	f.env.SetStepOutput(s.ID, out)
	r.setOutcome(i, core.StepSuccess, "")
	return nil
}

func (r *interp) decide(i int, qid, took, because string) {
	r.chargeText(len(qid) + len(took) + len(because) + 32)
	r.steps[i].Decisions = append(r.steps[i].Decisions, pilotage.Decision{At: qid, Took: took, Because: because})
}

func (r *interp) loopStart(f *frame, rs *model.RepeatStep, qid string) (*loopState, *halt) {
	ls := &loopState{spec: rs}
	switch {
	case rs.Count != nil:
		v, err := rs.Count.Eval(f.env)
		if err != nil {
			return nil, exprHalt(qid, err)
		}
		x, ok := core.InterpNumber(v)
		if !ok || x != float64(int64(x)) || x < 0 {
			return nil, &halt{core.StatusFailed, fmt.Sprintf("step %q: repeat count: got %s, want a whole number ≥ 0", qid, FormatReason(v))}
		}
		if x > float64(r.lim.MaxIterations) {
			return nil, &halt{core.StatusLimitExceeded, fmt.Sprintf("step %q: repeat count %d exceeds the limit of %d iterations", qid, int64(x), r.lim.MaxIterations)}
		}
		ls.count = int(x)
	case rs.ForEach != nil:
		v, err := rs.ForEach.Eval(f.env)
		if err != nil {
			return nil, exprHalt(qid, err)
		}
		items, ok := interpList(v)
		if !ok {
			return nil, &halt{core.StatusFailed, fmt.Sprintf("step %q: for_each: got %s, want an array", qid, core.InterpTypeName(v))}
		}
		ls.items = items
	case rs.While == nil && rs.Until == nil:
		return nil, &halt{core.StatusFailed, fmt.Sprintf("step %q: repeat has no loop kind", qid)}
	}
	return ls, nil
}

// loopDecide evaluates the continue-or-exit decision before iteration n.
// until is checked after each iteration, so iteration 1 always runs.
// Reaching a while/until loop's own max ends it normally.
func (r *interp) loopDecide(f *frame, ls *loopState, qid string, n int) (bool, string, *halt) {
	rs := ls.spec
	overMax := rs.Max > 0 && n > rs.Max
	switch {
	case rs.Count != nil:
		if n <= ls.count {
			return true, fmt.Sprintf("iteration %d of %d", n, ls.count), nil
		}
		if ls.count == 0 {
			return false, "count is 0", nil
		}
		return false, fmt.Sprintf("count %d done", ls.count), nil
	case rs.ForEach != nil:
		if n <= len(ls.items) {
			return true, fmt.Sprintf("item %d of %d", n, len(ls.items)), nil
		}
		if len(ls.items) == 0 {
			return false, "list is empty", nil
		}
		return false, fmt.Sprintf("all %d items done", len(ls.items)), nil
	case rs.While != nil:
		if overMax {
			return false, fmt.Sprintf("max %d iterations reached", rs.Max), nil
		}
		f.env.VarsMap()["index"] = n // the iteration about to run, as Home Assistant's repeat.index
		b, err := rs.While.EvalBool(f.env)
		if err != nil {
			return false, "", exprHalt(qid, err)
		}
		return b, fmt.Sprintf("while %s = %t", rs.While.Src, b), nil
	}
	if n == 1 {
		return true, "iteration 1 (until is checked after each iteration)", nil
	}
	f.env.VarsMap()["index"] = n - 1 // the iteration just run
	b, err := rs.Until.EvalBool(f.env)
	if err != nil {
		return false, "", exprHalt(qid, err)
	}
	if !b && overMax {
		return false, fmt.Sprintf("until %s = false; max %d iterations reached", rs.Until.Src, rs.Max), nil
	}
	return !b, fmt.Sprintf("until %s = %t", rs.Until.Src, b), nil
}

func interpList(v any) ([]any, bool) {
	if l, ok := v.([]any); ok {
		return l, true
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// saveVars remembers the current values of names in vars and returns a
// function that puts them back (deleting names that were absent).
func saveVars(vars map[string]any, names ...string) func() {
	type saved struct {
		v  any
		ok bool
	}
	old := make(map[string]saved, len(names))
	for _, n := range names {
		v, ok := vars[n]
		old[n] = saved{v, ok}
	}
	return func() {
		for n, s := range old {
			if s.ok {
				vars[n] = s.v
			} else {
				delete(vars, n)
			}
		}
	}
}
