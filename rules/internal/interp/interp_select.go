package interp

import (
	"fmt"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// callSelect runs a call by selector: it resolves the selector now (a
// World that is Selecting resolves it in the rule owner's scope against
// the live catalog; any other World gets the set validation found) and
// calls each action once with the same arguments. Every call is made and
// recorded even when one fails; the step's output maps each id to its
// output or error, and the first failure is the step's.
func (r *interp) callSelect(f *frame, s *model.RunStep, qid string, i int) *halt {
	sel := s.More.(*model.Selector)
	ids := sel.Resolved
	if sw, ok := r.w.(model.Selecting); ok {
		ids = sw.Select(pilotage.KindAction, sel)
	}
	if len(ids) > model.MaxSelected {
		return r.fail(i, &halt{core.StatusFailed, fmt.Sprintf("step %q: %s addresses %d actions now; at most %d are called by one step", qid, sel.Describe(), len(ids), model.MaxSelected)})
	}
	r.steps[i].Calls = append([]string(nil), ids...)
	args, h := r.evalArgs(f, qid, "the call's argument %q", s.Vals)
	if h != nil {
		return r.fail(i, h)
	}
	r.steps[i].Input = jsonSafeFresh(args)
	results := make(map[string]any, len(ids))
	var failed *halt
	for _, id := range ids {
		if r.ctx.Err() != nil {
			return r.fail(i, r.ctxHalt("during", qid))
		}
		out, err := r.w.Call(r.ctx, id, args)
		rec := CallRecord{Step: qid, ID: id, Args: args, Output: out, At: r.w.Now()}
		results[id] = out
		if err != nil {
			rec.Error, rec.Output = err.Error(), nil
			results[id] = map[string]any{"error": err.Error()}
			if failed == nil {
				failed = r.callHalt(qid, id, err)
			}
		}
		if h := r.keepCall(qid, rec); h != nil {
			return r.fail(i, h)
		}
	}
	out := map[string]any{"selector": sel.Describe(), "calls": results}
	r.steps[i].Output = jsonSafeFresh(out)
	f.env.SetStepOutput(s.ID, out)
	if failed != nil {
		if s.Flags&model.CallContinue != 0 && (failed.status == core.StatusFailed || failed.status == core.StatusNotConnected) {
			r.fail(i, failed) // recorded; the run goes on (continue_on_error)
			return nil
		}
		return r.fail(i, failed)
	}
	r.setOutcome(i, core.StepSuccess, "")
	return nil
}
