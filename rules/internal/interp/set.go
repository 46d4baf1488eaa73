package interp

// The set step: variables, copied and bounded as they are stored.

import (
	"fmt"

	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

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

// setValueFits bounds one value a set step stores: at most MaxValueBytes
// (its evaluation recorded it against MaxRunBytes: the step's output
// holds it). A variable of the top frame is held once more by the run's
// output, as it is when the run ends: it counts against MaxRunBytes for
// what it holds now, replacing what it held before.
func (r *interp) setValueFits(f *frame, qid, name string, v any) *halt {
	s := core.Measure(v, r.lim.MaxValueBytes, false)
	if s.Over(r.lim.MaxValueBytes) {
		return &halt{core.StatusLimitExceeded, fmt.Sprintf("step %q: the value of %q is more than %d bytes (MaxValueBytes)", qid, name, r.lim.MaxValueBytes)}
	}
	if f.depth > 0 {
		return nil // the call step's output holds the automation's vars
	}
	if r.varBytes == nil {
		r.varBytes = make(map[string]int, 4)
	}
	n := s.Bytes + core.JSONStringLen(name) + 2
	r.bytes += n - r.varBytes[name]
	r.varBytes[name] = n
	if r.bytes > r.lim.MaxRunBytes {
		return r.runBytesHalt(qid, fmt.Sprintf("keeping %q in the run's output", name))
	}
	return nil
}
