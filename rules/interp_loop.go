package rules

import (
	"fmt"
	"reflect"
	"strconv"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Loop decisions (spec §5.8.2): one per continue-or-exit evaluation.
const (
	TookContinue = "continue"
	TookExit     = "exit"
)

// loopState decides, before iteration n (1-based), whether a repeat step
// continues.
type loopState struct {
	spec  *repeatStep
	count int   // count loops
	items []any // for_each loops
}

// repeat runs one activation of a repeat step: a single trace entry that
// collects a decision per evaluation, and body entries qualified "#n".
// vars.index (1-based) is visible in every loop body, vars.item in for_each
// bodies; the enclosing values are restored when the loop ends.
func (r *interp) repeat(f *frame, s *runStep, qid, sfx string, i int) *halt {
	ls, h := r.loopStart(f, s.more.(*repeatStep), qid)
	if h != nil {
		return r.fail(i, h)
	}
	restore := saveVars(f.env.varsMap(), "index", "item")
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
			return r.fail(i, &halt{StatusLimitExceeded, fmt.Sprintf("step %q: loop exceeded %d iterations", qid, r.lim.MaxIterations)})
		}
		r.decide(i, qid, TookContinue, because)
		f.env.varsMap()["index"] = n
		if ls.items != nil {
			f.env.varsMap()["item"] = ls.items[n-1]
		}
		if h := r.nested(f, qid, ls.spec.do, sfx+"#"+strconv.Itoa(n)); h != nil {
			r.current = qid
			return r.fail(i, h)
		}
	}
	out := map[string]any{"iterations": n - 1}
	r.steps[i].Output = out
	f.env.setStepOutput(s.id, out)
	r.setOutcome(i, StepSuccess, "")
	return nil
}

func (r *interp) decide(i int, qid, took, because string) {
	r.chargeText(len(qid) + len(took) + len(because) + 32)
	r.steps[i].Decisions = append(r.steps[i].Decisions, pilotage.Decision{At: qid, Took: took, Because: because})
}

func (r *interp) loopStart(f *frame, rs *repeatStep, qid string) (*loopState, *halt) {
	ls := &loopState{spec: rs}
	switch {
	case rs.count != nil:
		v, err := rs.count.Eval(f.env)
		if err != nil {
			return nil, exprHalt(qid, err)
		}
		x, ok := interpNumber(v)
		if !ok || x != float64(int64(x)) || x < 0 {
			return nil, &halt{StatusFailed, fmt.Sprintf("step %q: repeat count: got %s, want a whole number ≥ 0", qid, formatReason(v))}
		}
		if x > float64(r.lim.MaxIterations) {
			return nil, &halt{StatusLimitExceeded, fmt.Sprintf("step %q: repeat count %d exceeds the limit of %d iterations", qid, int64(x), r.lim.MaxIterations)}
		}
		ls.count = int(x)
	case rs.forEach != nil:
		v, err := rs.forEach.Eval(f.env)
		if err != nil {
			return nil, exprHalt(qid, err)
		}
		items, ok := interpList(v)
		if !ok {
			return nil, &halt{StatusFailed, fmt.Sprintf("step %q: for_each: got %s, want an array", qid, interpTypeName(v))}
		}
		ls.items = items
	case rs.while == nil && rs.until == nil:
		return nil, &halt{StatusFailed, fmt.Sprintf("step %q: repeat has no loop kind", qid)}
	}
	return ls, nil
}

// loopDecide evaluates the continue-or-exit decision before iteration n.
// until is checked after each iteration, so iteration 1 always runs.
// Reaching a while/until loop's own max ends it normally.
func (r *interp) loopDecide(f *frame, ls *loopState, qid string, n int) (bool, string, *halt) {
	rs := ls.spec
	overMax := rs.max > 0 && n > rs.max
	switch {
	case rs.count != nil:
		if n <= ls.count {
			return true, fmt.Sprintf("iteration %d of %d", n, ls.count), nil
		}
		if ls.count == 0 {
			return false, "count is 0", nil
		}
		return false, fmt.Sprintf("count %d done", ls.count), nil
	case rs.forEach != nil:
		if n <= len(ls.items) {
			return true, fmt.Sprintf("item %d of %d", n, len(ls.items)), nil
		}
		if len(ls.items) == 0 {
			return false, "list is empty", nil
		}
		return false, fmt.Sprintf("all %d items done", len(ls.items)), nil
	case rs.while != nil:
		if overMax {
			return false, fmt.Sprintf("max %d iterations reached", rs.max), nil
		}
		f.env.varsMap()["index"] = n // the iteration about to run, as Home Assistant's repeat.index
		b, err := rs.while.EvalBool(f.env)
		if err != nil {
			return false, "", exprHalt(qid, err)
		}
		return b, fmt.Sprintf("while %s = %t", rs.while.Src, b), nil
	}
	if n == 1 {
		return true, "iteration 1 (until is checked after each iteration)", nil
	}
	f.env.varsMap()["index"] = n - 1 // the iteration just run
	b, err := rs.until.EvalBool(f.env)
	if err != nil {
		return false, "", exprHalt(qid, err)
	}
	if !b && overMax {
		return false, fmt.Sprintf("until %s = false; max %d iterations reached", rs.until.Src, rs.max), nil
	}
	return !b, fmt.Sprintf("until %s = %t", rs.until.Src, b), nil
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
