package rules

import (
	"fmt"
	"sync"
	"time"
)

// The wait step: until a state, an event or a condition, or a timeout.

func (r *interp) wait(f *frame, s *runStep, qid string, i int) *halt {
	ws := s.more.(*waitStep)
	req, in, h := r.waitRequest(f, ws, qid)
	if h != nil {
		return r.fail(i, h)
	}
	if h := r.record(qid, "the wait's input", in); h != nil {
		return r.fail(i, h)
	}
	r.steps[i].Input = in
	capped := false
	if rem := r.deadline.Sub(r.w.Now()); req.Timeout == 0 || req.Timeout > rem {
		req.Timeout, capped = max(rem, time.Nanosecond), true
	}
	began := r.w.Now()
	release := guardCheck(req)
	met, err := r.w.Wait(r.ctx, req)
	release()
	if err != nil {
		if r.ctx.Err() != nil {
			return r.fail(i, r.ctxHalt("during", qid))
		}
		return r.fail(i, &halt{StatusFailed, fmt.Sprintf("step %q: wait failed: %v", qid, err)})
	}
	waited := float64(r.w.Now().Sub(began)) / float64(time.Millisecond)
	out := map[string]any{"met": met, "waited_ms": waited}
	forced, assumed := r.assumedWait(qid)
	if assumed {
		out["assumed"] = "scenario.waits: " + forced
	}
	r.steps[i].Output = out
	f.env.setStepOutput(s.id, out)
	switch {
	case assumed && (met || ws.cont):
		r.assumed = append(r.assumed, qid)
		r.setOutcome(i, StepAssumed, "not simulated: scenario.waits says "+forced)
	case met:
		r.setOutcome(i, StepSuccess, "")
	case capped:
		return r.fail(i, r.wallHalt(qid))
	case ws.cont:
		r.setOutcome(i, StepTimeout, fmt.Sprintf("timed out after %s; continuing", ws.timeout))
	default:
		return r.fail(i, &halt{StatusTimeout, fmt.Sprintf("step %q: wait timed out after %s", qid, ws.timeout)})
	}
	return nil
}

// assumedWait reports whether a test run's scenario forced the wait's
// result (and what it said).
func (r *interp) assumedWait(qid string) (string, bool) {
	if sw, ok := r.w.(*SimWorld); ok {
		return sw.Assumed(qid)
	}
	return "", false
}

// waitRequest builds the World's view of a wait step and the trace input
// describing it. An expression that fails on its first check fails the
// step; later failures count as "not yet".
// boundWait is ws with the id its catalog-reference param holds in this
// frame and the thresholds its params give (ws itself when it names the
// id and holds the thresholds): an unbound body, such as a promoted
// automation another rule calls, binds them when it runs.
func boundWait(f *frame, ws *waitStep, qid string) (*waitStep, *halt) {
	if !ws.byParam && len(ws.inputs) == 0 {
		return ws, nil
	}
	bound := *ws
	var h *halt
	switch {
	case !ws.byParam:
	case bound.state != "":
		bound.state, h = paramID(f, ws.state, qid)
	default:
		bound.event, h = paramID(f, ws.event, qid)
	}
	bound.byParam = false
	for _, in := range ws.inputs {
		v, err := fieldValue(in.field, f.env.Params[in.param])
		if err != nil {
			return nil, &halt{StatusFailed, fmt.Sprintf("step %q: params.%s as %s: %v", qid, in.param, in.field, err)}
		}
		n := v.(float64)
		if in.field == "above" {
			bound.above = &n
		} else {
			bound.below = &n
		}
	}
	bound.inputs = nil
	return &bound, h
}

func (r *interp) waitRequest(f *frame, ws *waitStep, qid string) (*WaitRequest, map[string]any, *halt) {
	ws, h := boundWait(f, ws, qid)
	if h != nil {
		return nil, nil, h
	}
	req := &WaitRequest{StepID: qid, Timeout: ws.timeout}
	in := map[string]any{}
	if ws.timeout > 0 {
		in["timeout"] = ws.timeout.String()
	}
	if ws.hold != nil {
		if req.For, h = r.duration(f, ws.hold, qid, "wait for"); h != nil {
			return nil, nil, h
		}
		in["for"] = req.For.String()
	}
	switch {
	case ws.event != "":
		req.Event, req.EventValue = ws.event, ws.to
		in["event"] = ws.event
		if ws.to.Set {
			in["value"] = jsonSafe(ws.to.V)
		}
		return req, in, nil
	case ws.state != "":
		in["state"] = ws.state
		addValueFilters(in, ws)
		req.Entities = []string{ws.state}
		req.Check = r.stateCheck(ws)
	case ws.expr != nil:
		in["expr"] = ws.expr.Src
		for _, ref := range ws.expr.Refs {
			req.Entities = interpAppendUnique(req.Entities, ref.ID)
		}
		x, env := ws.expr, f.env
		if _, err := x.EvalBool(env); err != nil {
			return nil, nil, exprHalt(qid, err)
		}
		req.Check = func() (ok bool) {
			defer func() {
				if recover() != nil {
					ok = false
				}
			}()
			b, err := x.EvalBool(env)
			return err == nil && b
		}
	default:
		return nil, nil, &halt{StatusFailed, fmt.Sprintf("step %q: wait has nothing to wait for", qid)}
	}
	return req, in, nil
}

func addValueFilters(in map[string]any, ws *waitStep) {
	if ws.to.Set {
		in["to"] = jsonSafe(ws.to.V)
	}
	if ws.from.Set {
		in["from"] = jsonSafe(ws.from.V)
	}
	if ws.above != nil {
		in["above"] = *ws.above
	}
	if ws.below != nil {
		in["below"] = *ws.below
	}
}

// guardCheck makes req.Check safe to call from the World's goroutines: once
// the returned release has run (right after Wait returns, before the run
// goes on and changes vars), Check reports false without touching the run's
// environment, and no evaluation is still in flight.
func guardCheck(req *WaitRequest) (release func()) {
	check := req.Check
	if check == nil {
		return func() {}
	}
	// One check at a time: an evaluation uses its environment's byte
	// budget (and caches), which are not shared between goroutines.
	var mu sync.Mutex
	done := false
	req.Check = func() bool {
		mu.Lock()
		defer mu.Unlock()
		return !done && check()
	}
	return func() {
		mu.Lock()
		done = true
		mu.Unlock()
	}
}

// stateCheck holds when the state has the wanted value: equal to `to`,
// different from `from` (it left that value), above/below the bounds.
func (r *interp) stateCheck(ws *waitStep) func() bool {
	w := r.w
	return func() (ok bool) {
		defer func() {
			if recover() != nil {
				ok = false
			}
		}()
		v, _ := w.State(ws.state)
		if ws.to.Set && !interpEqual(v, ws.to.V) {
			return false
		}
		if ws.from.Set && interpEqual(v, ws.from.V) {
			return false
		}
		if ws.above != nil || ws.below != nil {
			x, isNum := interpNumber(v)
			if !isNum || (ws.above != nil && x <= *ws.above) || (ws.below != nil && x >= *ws.below) {
				return false
			}
		}
		return true
	}
}
