package interp

// The call step end to end: its arguments, the send (the run's last call
// perhaps left pending, then ended by RunResult.Finish), its record and
// the values it records; then the call's other forms (a promoted
// automation run inline, a selector's calls).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// call runs a call step: an action through the World (its last top-level
// one perhaps left pending, see AsyncCaller), a promoted automation
// inline, or every action a selector resolves to.
func (r *interp) call(f *frame, s *model.RunStep, qid string, i int) *halt {
	if s.Flags&model.CallSelect != 0 {
		return r.callSelect(f, s, qid, i)
	}
	target := s.Text
	if s.Flags&model.CallParam != 0 {
		var h *halt
		if target, h = paramID(f, s.Text, qid); h != nil {
			return r.fail(i, h)
		}
	}
	if m := r.mem; !m.callUsed {
		m.firstCall[0], m.callUsed = target, true
		r.steps[i].Calls = m.firstCall[:1:1]
	} else {
		r.steps[i].Calls = []string{target}
	}
	args, h := r.evalArgs(f, qid, "the call's argument %q", s.Vals)
	if h != nil {
		return r.fail(i, h)
	}
	r.steps[i].Input = jsonSafeFresh(args)
	if sub, isAuto := r.automation(f, target); isAuto {
		return r.callAutomation(f, s, qid, i, args, sub)
	}
	out, err := r.send(f, s, i, qid, target, args)
	rec := CallRecord{Step: qid, ID: target, Args: args, Output: out, At: r.w.Now()}
	if err != nil {
		rec.Error = err.Error()
		_ = r.keepCall(qid, rec) // the call's failure is what ends the run
		h := r.callHalt(qid, target, err)
		if s.Flags&model.CallContinue != 0 && (h.status == core.StatusFailed || h.status == core.StatusNotConnected) {
			r.fail(i, h) // recorded; the run goes on (continue_on_error)
			f.env.SetStepOutput(s.ID, map[string]any{"error": h.msg})
			return nil
		}
		return r.fail(i, h)
	}
	if h := r.keepCall(qid, rec); h != nil {
		return r.fail(i, h)
	}
	r.steps[i].Output = jsonSafeFresh(out)
	f.env.SetStepOutput(s.ID, out)
	r.setOutcome(i, core.StepSuccess, "")
	return nil
}

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

// automation resolves a call target to a promoted body: first the bodies
// resolved at validation, then the World. isAuto is true for an entry of
// kind automation even when no body is available (sub == nil).
func (r *interp) automation(f *frame, id string) (sub *model.Compiled, isAuto bool) {
	if c, ok := f.c.Sub[id]; ok && c != nil {
		return c, true
	}
	e := f.c.Entry(id)
	if e != nil && e.Kind != pilotage.KindAutomation {
		return nil, false // an action (most calls): the World is not asked
	}
	if c, ok := r.w.Automation(id); ok && c != nil {
		return c, true
	}
	return nil, e != nil
}

// send makes call step s (entry i): as the run's pending tail when it may
// be (asyncTail) and the World leaves it pending, else waiting for it.
func (r *interp) send(f *frame, s *model.RunStep, i int, qid, target string, args map[string]any) (any, error) {
	ac := r.asyncTail(f, s)
	if ac == nil {
		return r.w.Call(r.ctx, target, args)
	}
	out, pending, err := ac.CallAsync(r.ctx, target, args)
	if pending && err == nil {
		r.mem.res.tail = tailCall{r: r, i: i, k: len(r.calls), qid: qid, target: target} // k: the record call appends next
	}
	return out, err
}

// asyncTail returns the AsyncCaller to send s with when s is the run's
// last top-level step and the run may end before its acknowledgement.
func (r *interp) asyncTail(f *frame, s *model.RunStep) AsyncCaller {
	if !r.tailAsync || f != &r.mem.top || len(f.c.Steps) == 0 || s != &f.c.Steps[len(f.c.Steps)-1] || s.Flags&model.CallContinue != 0 {
		return nil
	}
	ac, _ := r.w.(AsyncCaller)
	return ac
}

// AsyncCaller is a World whose calls can be acknowledged after they
// return (the engine's live world over a broker connection).
type AsyncCaller interface {
	// CallAsync starts a call as Call does and returns the output it has if
	// it succeeds. pending: the call's end is still to come, and is told to
	// the World's owner, not to the run; the owner then hands it to
	// RunResult.Finish. An error returned ends the call.
	CallAsync(ctx context.Context, id string, args map[string]any) (out any, pending bool, err error)
}

// A run whose last step is a call need not wait for that call's
// acknowledgement to be over: nothing follows it that could depend on
// its result. With RunInput.AsyncTail and an AsyncCaller World, Run
// returns once the call is sent (RunResult.Pending), and the run's result
// becomes final when its owner hands it the call's end (RunResult.Finish).
// A call that fails then amends the result to exactly what a waiting run
// would have made of it. The call is the last top-level step of the body,
// to an action (a promoted automation is run inline, and its steps follow
// the call).

// tailCall is the pending last call of a run: where its end goes.
type tailCall struct {
	r      *interp
	i      int // the call's trace entry
	k      int // the call's record
	qid    string
	target string
}

// Pending reports whether the run's last call is still waiting for its
// end: res is final only once Finish is called with it.
func (res *RunResult) Pending() bool { return res.tail.r != nil }

// Finish ends a Pending run with its last call's end (err nil: the call
// succeeded). A failed call ends the run as it would have ended a run
// that waited: the call's record has its error, its entry the failure,
// and the run its status. Finish is called once, after Run returned.
func (res *RunResult) Finish(err error) {
	t := &res.tail
	r := t.r
	if r == nil {
		return
	}
	if err != nil {
		rec := &r.calls[t.k]
		rec.Output, rec.Error = nil, err.Error()
		r.steps[t.i].Output = nil
		h := r.fail(t.i, r.callHalt(t.qid, t.target, err))
		res.Outcome = pilotage.Outcome{OK: h.ok(), Status: h.status}
		if !h.ok() {
			res.Outcome.Error = h.msg
		}
	}
	res.Ended = r.safeNow()
	*t = tailCall{}
}

// CallRecord is one World.Call the run made.
type CallRecord struct {
	Step   string         `json:"step"` // qualified trace id
	ID     string         `json:"id"`   // catalog id
	Args   map[string]any `json:"args,omitempty"`
	Output any            `json:"output,omitempty"`
	Error  string         `json:"error,omitempty"`
	At     time.Time      `json:"at"`
}

// keepCall appends the record of a call the World was asked to make. The
// record holds the arguments a second time (the trace entry's input holds
// them too) and the output twice with the entry's: both count against
// MaxRunBytes, and when they would pass it the record keeps only which
// call was made, when (the halt says why the rest is missing).
func (r *interp) keepCall(qid string, rec CallRecord) *halt {
	h := r.record(qid, "the call's record", rec.Args)
	for k := 0; k < 2 && h == nil && rec.Output != nil; k++ {
		h = r.record(qid, "the call's output", rec.Output)
	}
	if h != nil {
		rec.Args, rec.Output = nil, nil
	}
	r.calls = append(r.calls, rec)
	return h
}

// callHalt is how a call's error ends its step.
func (r *interp) callHalt(qid, id string, err error) *halt {
	switch {
	case errors.Is(err, ErrNotAcknowledged):
		why := strings.TrimPrefix(err.Error(), ErrNotAcknowledged.Error()+": ")
		return &halt{core.StatusNotAcknowledged, fmt.Sprintf("step %q: %s %s: %s", qid, id, ErrNotAcknowledged, why)}
	case errors.Is(err, ErrNotConnected):
		return &halt{core.StatusNotConnected, fmt.Sprintf("step %q: %s not sent: not connected to the MQTT broker", qid, id)}
	case r.ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		return r.ctxHalt("during", qid)
	}
	return &halt{core.StatusFailed, fmt.Sprintf("step %q: %s failed: %v", qid, id, err)}
}

// ErrNotConnected marks a call that could not be published because the MQTT
// broker is unreachable. The engine's live World wraps the mqtt package's
// error with it, so the run ends with status not_connected instead of failed.
var ErrNotConnected = errors.New("not connected to the MQTT broker")

// ErrNotAcknowledged marks a call that was published but not acknowledged
// by the broker in time: it may still arrive. The engine's live World
// wraps the mqtt package's error with it, so the run ends with status
// not_acknowledged instead of failed (a retry could apply it twice).
var ErrNotAcknowledged = errors.New("not acknowledged (may still arrive)")

// jsonSafeFresh is jsonSafe for a value made for this step alone (the
// args map of a call, the values of a set step, a World's call output):
// when it is an object whose members are already JSON-safe scalars, the
// copy jsonSafe would make is equal to it, and since nothing changes such
// a value later, the trace can hold it as it is. Anything else (members
// that are objects or lists, which may be the run's live vars or steps)
// is copied as before.
func jsonSafeFresh(v any) any {
	if m, ok := v.(map[string]any); ok && m != nil {
		for _, e := range m {
			if !safeScalar(e) {
				return jsonSafe(v)
			}
		}
		return v
	}
	return jsonSafe(v)
}

// safeScalar reports whether jsonSafe returns v itself and v holds no
// reference (an immutable scalar).
func safeScalar(v any) bool {
	switch x := v.(type) {
	case nil, bool, string, int, int64, int32, uint, uint64, uint32, json.Number, time.Time:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	}
	return false
}

// jsonSafe returns v in a form encoding/json always accepts: maps with
// string keys, slices, strings, finite numbers, booleans, nil and
// time.Time. Non-finite floats and values JSON cannot carry (functions,
// channels) become strings, so a trace never fails to encode.
func jsonSafe(v any) any {
	switch x := v.(type) {
	case nil, bool, string, int, int64, int32, uint, uint64, uint32, json.Number, time.Time:
		return v
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return v
	case time.Duration:
		return x.String()
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonSafe(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonSafe(e)
		}
		return out
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if l, ok := interpList(v); ok {
			return jsonSafe(l)
		}
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			out := make(map[string]any, rv.Len())
			it := rv.MapRange()
			for it.Next() {
				out[it.Key().String()] = jsonSafe(it.Value().Interface())
			}
			return out
		}
	case reflect.Float32:
		return jsonSafe(rv.Float())
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return fmt.Sprintf("<%s>", rv.Kind())
	case reflect.Pointer:
		if rv.IsNil() {
			return nil
		}
		return jsonSafe(rv.Elem().Interface())
	}
	if _, err := json.Marshal(v); err != nil {
		return fmt.Sprint(v)
	}
	return v
}

// callAutomation runs a promoted body inline (trace_subprogram expanded):
// its entries are prefixed "<qid>/", its params are the call's args, and
// its triggers and conditions are not evaluated (like Home Assistant's
// automation.trigger). A stop without error ends only the sub-program.
func (r *interp) callAutomation(f *frame, s *model.RunStep, qid string, i int, args map[string]any, sub *model.Compiled) *halt {
	if sub == nil {
		return r.fail(i, &halt{core.StatusFailed, fmt.Sprintf("step %q: automation %q is not available", qid, r.steps[i].Calls[0])})
	}
	if f.depth+1 > r.lim.MaxCallDepth {
		return r.fail(i, &halt{core.StatusLimitExceeded, fmt.Sprintf("step %q: call depth limit of %d exceeded", qid, r.lim.MaxCallDepth)})
	}
	env := &model.Env{
		Trigger:  f.env.TriggerMap(),
		Params:   WithParamDefaults(sub.ParamsSchema, args),
		World:    r.w,
		Selected: sub.ExprSels,
		Budget:   r.lim.MemoryBudget,
		Cache:    r.cache,

		ValueBytes: r.lim.MaxValueBytes,
		EvalBytes:  r.lim.MaxEvalBytes,
		EvalOps:    r.lim.MaxEvalOps,
		RunOps:     &r.ops,
		Ctx:        r.ctx,
	}
	sf := &frame{c: sub, env: env, prefix: qid + "/", depth: f.depth + 1}
	h := r.nested(sf, qid, sub.Steps, "")
	env.Release()
	r.current = qid
	out := map[string]any{}
	if len(env.Vars) > 0 {
		out["vars"] = env.Vars
	}
	status := core.StatusSuccess
	if h != nil {
		status = h.status
		if h.status == core.StatusStopped {
			out["stop"] = h.msg
		}
	}
	out["status"] = status
	if hb := r.record(qid, "the automation's output", out); hb != nil {
		if h == nil || h.ok() {
			h = hb
		}
	} else {
		r.steps[i].Output = jsonSafe(out)
	}
	f.env.SetStepOutput(s.ID, out)
	if h != nil && !h.ok() {
		return r.fail(i, h)
	}
	r.setOutcome(i, core.StepSuccess, "")
	return nil
}

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
	if len(ids) == 0 {
		// A run that called nothing reads as a success: say why in the trace.
		out["note"] = "the selector matches no action now: nothing was called"
	}
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
