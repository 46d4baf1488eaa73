package interp

// The steps that wait: delay (a duration) and wait (until a state, an
// event or a condition, or a timeout).

import (
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

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

func (r *interp) wait(f *frame, s *model.RunStep, qid string, i int) *halt {
	ws := s.More.(*model.WaitStep)
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
		return r.fail(i, &halt{core.StatusFailed, fmt.Sprintf("step %q: wait failed: %v", qid, err)})
	}
	waited := float64(r.w.Now().Sub(began)) / float64(time.Millisecond)
	out := map[string]any{"met": met, "waited_ms": waited}
	forced, assumed := r.assumedWait(qid)
	if assumed {
		out["assumed"] = "scenario.waits: " + forced
	}
	r.steps[i].Output = out
	f.env.SetStepOutput(s.ID, out)
	switch {
	case assumed && (met || ws.Cont):
		r.assumed = append(r.assumed, qid)
		r.setOutcome(i, core.StepAssumed, "not simulated: scenario.waits says "+forced)
	case met:
		r.setOutcome(i, core.StepSuccess, "")
	case capped:
		return r.fail(i, r.wallHalt(qid))
	case ws.Cont:
		r.setOutcome(i, core.StepTimeout, fmt.Sprintf("timed out after %s; continuing", ws.Timeout))
	default:
		return r.fail(i, &halt{core.StatusTimeout, fmt.Sprintf("step %q: wait timed out after %s", qid, ws.Timeout)})
	}
	return nil
}

// assumedWait reports whether a test run's scenario forced the wait's
// result (and what it said).
func (r *interp) assumedWait(qid string) (string, bool) {
	if sw, ok := r.w.(interface{ Assumed(string) (string, bool) }); ok {
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
func boundWait(f *frame, ws *model.WaitStep, qid string) (*model.WaitStep, *halt) {
	if !ws.ByParam && len(ws.Inputs) == 0 {
		return ws, nil
	}
	bound := *ws
	var h *halt
	switch {
	case !ws.ByParam:
	case bound.State != "":
		bound.State, h = paramID(f, ws.State, qid)
	default:
		bound.Event, h = paramID(f, ws.Event, qid)
	}
	bound.ByParam = false
	for _, in := range ws.Inputs {
		v, err := model.FieldValue(in.Field, f.env.Params[in.Param])
		if err != nil {
			return nil, &halt{core.StatusFailed, fmt.Sprintf("step %q: params.%s as %s: %v", qid, in.Param, in.Field, err)}
		}
		switch in.Field {
		case "timeout":
			bound.Timeout = v.(time.Duration)
		case "above":
			n := v.(float64)
			bound.Above = &n
		default:
			n := v.(float64)
			bound.Below = &n
		}
	}
	bound.Inputs = nil
	return &bound, h
}

func (r *interp) waitRequest(f *frame, ws *model.WaitStep, qid string) (*model.WaitRequest, map[string]any, *halt) {
	ws, h := boundWait(f, ws, qid)
	if h != nil {
		return nil, nil, h
	}
	req := &model.WaitRequest{StepID: qid, Timeout: ws.Timeout}
	in := map[string]any{}
	if ws.Timeout > 0 {
		in["timeout"] = ws.Timeout.String()
	}
	if ws.Hold != nil {
		if req.For, h = r.duration(f, ws.Hold, qid, "wait for"); h != nil {
			return nil, nil, h
		}
		in["for"] = req.For.String()
	}
	switch {
	case ws.Event != "":
		req.Event, req.EventValue = ws.Event, ws.To
		in["event"] = ws.Event
		if ws.To.Set {
			in["value"] = jsonSafe(ws.To.V)
		}
		return req, in, nil
	case ws.State != "":
		in["state"] = ws.State
		addValueFilters(in, ws)
		req.Entities = []string{ws.State}
		req.Check = r.stateCheck(ws)
	case ws.Expr != nil:
		in["expr"] = ws.Expr.Src
		for _, ref := range ws.Expr.Refs {
			req.Entities = interpAppendUnique(req.Entities, ref.ID)
		}
		for _, sr := range ws.Expr.Sels {
			// The states it addresses as the wait starts (the check
			// itself resolves again each time).
			ids, _ := model.SelectStates(r.w, &sr.Sel, f.env.Selected[sr.Sel.Key()])
			for _, id := range ids {
				req.Entities = interpAppendUnique(req.Entities, id)
			}
		}
		x, env := ws.Expr, f.env
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
		return nil, nil, &halt{core.StatusFailed, fmt.Sprintf("step %q: wait has nothing to wait for", qid)}
	}
	return req, in, nil
}

func addValueFilters(in map[string]any, ws *model.WaitStep) {
	if ws.To.Set {
		in["to"] = jsonSafe(ws.To.V)
	}
	if ws.From.Set {
		in["from"] = jsonSafe(ws.From.V)
	}
	if ws.Above != nil {
		in["above"] = *ws.Above
	}
	if ws.Below != nil {
		in["below"] = *ws.Below
	}
}

// guardCheck makes req.Check safe to call from the World's goroutines: once
// the returned release has run (right after Wait returns, before the run
// goes on and changes vars), Check reports false without touching the run's
// environment, and no evaluation is still in flight.
func guardCheck(req *model.WaitRequest) (release func()) {
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
func (r *interp) stateCheck(ws *model.WaitStep) func() bool {
	w := r.w
	return func() (ok bool) {
		defer func() {
			if recover() != nil {
				ok = false
			}
		}()
		v, _ := w.State(ws.State)
		if ws.To.Set && !interpEqual(v, ws.To.V) {
			return false
		}
		if ws.From.Set && interpEqual(v, ws.From.V) {
			return false
		}
		if ws.Above != nil || ws.Below != nil {
			x, isNum := core.InterpNumber(v)
			if !isNum || (ws.Above != nil && x <= *ws.Above) || (ws.Below != nil && x >= *ws.Below) {
				return false
			}
		}
		return true
	}
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
