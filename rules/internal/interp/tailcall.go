package interp

import (
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"context"
	"sync/atomic"

	"github.com/pilothouse/pilothouse/pilotage"
)

// AsyncCaller is a World whose calls can be acknowledged after they
// return (the engine's live world over a broker connection).
type AsyncCaller interface {
	// CallAsync starts a call as Call does and returns the output it has if
	// it succeeds; done is then called once with the call's error (nil:
	// it succeeded), possibly before CallAsync returns and on another
	// goroutine. An error returned ends the call: done is never called.
	CallAsync(ctx context.Context, id string, args map[string]any, done func(error)) (any, error)
}

// A run whose last step is a call need not wait for that call's
// acknowledgement to be over: nothing follows it that could depend on
// its result. With RunInput.AsyncTail and an AsyncCaller World, Run
// returns once the call is sent, and the run's result becomes final when
// the acknowledgement comes (RunResult.Then). A call that fails then
// amends the result to exactly what a waiting run would have made of it.
// The call is the last top-level step of the body, to an action (a
// promoted automation is run inline, and its steps follow the call).

// tailCall is the pending last call of a run, and the join of its two
// ends: the run's (Then) and the call's (done). Whichever comes second
// finishes the result.
type tailCall struct {
	r      *interp
	res    *RunResult
	i      int // the call's trace entry
	k      int // the call's record
	qid    string
	target string
	err    error
	then   func()
	ends   atomic.Int32
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

// send makes call step s (entry i): as the run's pending tail when it may
// be (asyncTail), else waiting for it.
func (r *interp) send(f *frame, s *model.RunStep, i int, qid, target string, args map[string]any) (any, *tailCall, error) {
	ac := r.asyncTail(f, s)
	if ac == nil {
		out, err := r.w.Call(r.ctx, target, args)
		return out, nil, err
	}
	tail := &tailCall{r: r, res: &r.mem.res, i: i, qid: qid, target: target}
	out, err := ac.CallAsync(r.ctx, target, args, tail.done)
	return out, tail, err
}

// done is the call's end.
func (t *tailCall) done(err error) {
	t.err = err
	if t.ends.Add(1) == 2 {
		t.finish()
	}
}

// Then reports whether the run's last call is still waiting for its
// acknowledgement. If so, res is final only once fn is called (once,
// perhaps on another goroutine, perhaps before Then returns); if not, fn
// is never called and res is final now.
func (res *RunResult) Then(fn func()) bool {
	t := res.Tail
	if t == nil {
		return false
	}
	t.then = fn
	if t.ends.Add(1) == 2 {
		t.finish()
	}
	return true
}

// finish amends the result with the call's end and hands it on. A failed
// call ends the run as it would have ended a run that waited: the call's
// record has its error, its entry the failure, and the run its status.
func (t *tailCall) finish() {
	r, res := t.r, t.res
	if t.err != nil {
		rec := &r.calls[t.k]
		rec.Output, rec.Error = nil, t.err.Error()
		r.steps[t.i].Output = nil
		h := r.fail(t.i, r.callHalt(t.qid, t.target, t.err))
		res.Outcome = pilotage.Outcome{OK: h.ok(), Status: h.status}
		if !h.ok() {
			res.Outcome.Error = h.msg
		}
	}
	res.Ended = r.safeNow()
	res.Tail = nil
	t.then()
}
