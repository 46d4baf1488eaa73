package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// Mode bounds when a program sets none.
const defaultModeMax = 10

// fire starts a firing of the trigger's rule according to its mode.
func (at *armedTrigger) fire(value, prev any, because string) { at.fireAs("", value, prev, because) }

// fireAs fires the trigger; entity names the state that fired a trigger
// by selector ("" for the others).
func (at *armedTrigger) fireAs(entity string, value, prev any, because string) {
	ar := at.r
	e := ar.s.e
	tf := rules.TriggerFire{ID: at.t.ID(), Entity: entity, Value: value, From: prev, Time: e.Now().In(e.cfg.TimeZone), Because: because}
	ar.mu.Lock()
	if ar.stopped {
		ar.mu.Unlock()
		return
	}
	mode := ar.c.Mode()
	max := ar.c.Max()
	if max <= 0 {
		max = defaultModeMax
	}
	switch mode {
	case rules.ModeRestart:
		for _, f := range ar.running {
			f.cancel(context.Canceled)
		}
	case rules.ModeQueued:
		if len(ar.running) > 0 {
			// max counts the running firing and the waiting ones, as in
			// Home Assistant, so a ported max means the same.
			if len(ar.running)+len(ar.queue) >= max {
				ar.mu.Unlock()
				ar.recordSkipped(tf, "queue full (max "+itoa(max)+" running or waiting)")
				return
			}
			ar.queue = append(ar.queue, tf)
			ar.mu.Unlock()
			return
		}
	case rules.ModeParallel:
		if len(ar.running) >= max {
			ar.mu.Unlock()
			ar.recordSkipped(tf, "already running "+itoa(max)+" times (max)")
			return
		}
	default: // single
		if len(ar.running) > 0 {
			ar.mu.Unlock()
			ar.recordSkipped(tf, "already running (mode single)")
			return
		}
	}
	f := ar.startLocked(tf)
	ar.mu.Unlock()
	if !ar.here.Load() {
		ar.s.work.run(f)
		return
	}
	start := time.Now()
	ar.s.work.runHere(f)
	if took := time.Since(start); took > ar.s.slowHere && ar.slowHere.Add(1) == slowHereStrikes {
		ar.here.Store(false)
		e.log.Warn("rule's firings now run on workers: its body took too long on the goroutine delivering events",
			"rule", ar.name, "took", took, "over", ar.s.slowHere)
	}
}

// A rule whose body only ends in a command runs where its event is
// delivered (armedRule.here), holding up the events behind it; one whose
// firings took longer than scheduler.slowHere (defaultSlowHere)
// slowHereStrikes times runs on workers from then on.
const (
	defaultSlowHere = 10 * time.Millisecond
	slowHereStrikes = 3
)

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// startLocked makes one firing, counted as running; ar.mu is held. The
// caller runs it once ar.mu is released.
func (ar *armedRule) startLocked(tf rules.TriggerFire) *firing {
	s := ar.s
	f := newFiring(s.ctx, s.e.cfg.Limits.MaxWall)
	f.ar, f.tf, f.world = ar, tf, liveWorld{e: s.e, p: ar.principal}
	ar.running = append(ar.running, f)
	s.wg.Add(1)
	return f
}

// limited: a body without delays and waits only waits for its commands'
// acknowledgements; it counts against workers' maxRunning.
func (f *firing) limited() bool { return !f.ar.waits }

// do runs the firing on a worker (the task workers run), and reports
// whether it is over: a firing whose last command waits for its
// acknowledgement goes on without the worker, and ends on the
// acknowledgement (see rules.AsyncCaller).
func (f *firing) do() bool {
	if f.ar.run(f, f.tf, &f.world, f.endAlone) {
		return false
	}
	f.end()
	return true
}

// endAlone ends a firing that went on without its worker, and hands its
// slot on.
func (f *firing) endAlone() {
	f.end()
	if f.limited() {
		f.ar.s.work.finished()
	}
}

// end lets the rule's next queued firing start.
func (f *firing) end() {
	ar, s := f.ar, f.ar.s
	defer s.wg.Done()
	f.release() // the deadline timer, if made
	ar.mu.Lock()
	// In place: ar.running is only read and written under ar.mu, and
	// keeping its array spares an allocation per firing.
	if i := slices.Index(ar.running, f); i >= 0 {
		ar.running = slices.Delete(ar.running, i, i+1)
	}
	var next *firing
	if len(ar.queue) > 0 && !ar.stopped {
		n := ar.queue[0]
		ar.queue = ar.queue[1:]
		next = ar.startLocked(n)
	}
	ar.mu.Unlock()
	if next != nil {
		s.work.run(next)
	}
}

// firing is one running execution of a rule body, and the context it runs
// under: what context.WithTimeout(parent, maxWall) gives (cancelled by
// cancel, by the parent, or DeadlineExceeded at the deadline), in the
// firing's own allocation. The timer and the parent watch are only made
// when Done is asked for (a wait, a delay, a publish to an external
// broker); until then Err checks the clock and the parent itself, which is
// all most firings need (an embedded-broker publish only calls Err).
type firing struct {
	ar    *armedRule
	tf    rules.TriggerFire
	world liveWorld

	parent   context.Context
	deadline time.Time

	mu    sync.Mutex
	err   error
	done  chan struct{} // made by Done; closed when err is set
	timer *time.Timer   // made by Done: expires the firing at the deadline
	stop  func() bool   // made by Done: stops watching the parent
	abort func(error)   // ends the wait of a command sent asynchronously
}

func newFiring(parent context.Context, maxWall time.Duration) *firing {
	d := time.Now().Add(maxWall)
	if pd, ok := parent.Deadline(); ok && pd.Before(d) {
		d = pd // as context.WithDeadline: the earlier deadline is the one
	}
	return &firing{parent: parent, deadline: d}
}

func (f *firing) Deadline() (time.Time, bool) { return f.deadline, true }

func (f *firing) Value(key any) any { return f.parent.Value(key) }

func (f *firing) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checkLocked()
	return f.err
}

// checkLocked ends the firing when its parent ended or its deadline passed.
func (f *firing) checkLocked() {
	if f.err != nil {
		return
	}
	if err := f.parent.Err(); err != nil {
		f.endLocked(err)
	} else if !time.Now().Before(f.deadline) {
		f.endLocked(context.DeadlineExceeded)
	}
}

func (f *firing) Done() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.done != nil {
		return f.done
	}
	f.done = make(chan struct{})
	if f.checkLocked(); f.err != nil {
		close(f.done)
		return f.done
	}
	f.timer = time.AfterFunc(time.Until(f.deadline), func() { f.cancel(context.DeadlineExceeded) })
	f.stop = context.AfterFunc(f.parent, func() { f.cancel(f.parent.Err()) })
	return f.done
}

// cancel ends the firing with err unless it has already ended, and the
// wait of its command sent asynchronously. That command's end is then
// handled on a goroutine of its own: cancel's callers may hold the rule's
// lock, which ending the firing takes.
func (f *firing) cancel(err error) {
	f.mu.Lock()
	abort := f.abort
	if f.err == nil {
		f.endLocked(err)
	} else {
		abort = nil
	}
	f.abort = nil
	f.mu.Unlock()
	if abort != nil {
		go abort(err)
	}
}

// onCancel registers abort as the end of the firing's asynchronous
// command, called if the firing is cancelled; at once if it already was
// (between the command's write and now).
func (f *firing) onCancel(abort func(error)) {
	f.mu.Lock()
	err := f.err
	if err == nil {
		f.abort = abort
	}
	f.mu.Unlock()
	if err != nil {
		abort(err)
	}
}

// release ends the firing's context once it is over (its timers stop);
// its command, if any, has had its end.
func (f *firing) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.abort = nil
	if f.err == nil {
		f.endLocked(context.Canceled)
	}
}

func (f *firing) endLocked(err error) {
	f.err = err
	if f.done != nil {
		close(f.done)
	}
	if f.timer != nil {
		f.timer.Stop()
	}
	if f.stop != nil {
		f.stop()
	}
}

// run executes the body once on the live world w and records the firing.
// With then set, a body whose last step is a command may end once that
// command is sent: run then reports true, and the firing is recorded and
// then called when the broker acknowledges it.
func (ar *armedRule) run(ctx context.Context, tf rules.TriggerFire, w *liveWorld, then func()) (pending bool) {
	e := ar.s.e
	runID := storage.NewRunID()
	started := e.Now()
	if reason := ar.checkBroken(); reason != "" {
		ar.record(runID, started, pilotage.Outcome{OK: false, Status: rules.StatusBroken, Error: reason}, nil, nil)
		return false
	}
	if ar.waits {
		// A body that can take time is recorded as running first, so a
		// crash in the middle leaves a record that the next start marks
		// interrupted.
		ar.record(runID, started, pilotage.Outcome{OK: false, Status: rules.StatusRunning, Error: "the firing is running"}, nil, nil)
	}
	in := rules.RunInput{Trigger: tf, Params: ar.params, Limits: e.cfg.Limits, Cache: e.rules, AsyncTail: then != nil && !ar.waits}
	if ar.c.Throttle() > 0 {
		in.Throttle = ar.throttleGate
	}
	res := rules.Run(ctx, ar.c, w, in)
	if res.Then(func() { ar.recordRun(runID, started, res); then() }) {
		return true
	}
	ar.recordRun(runID, started, res)
	return false
}

// recordRun records the firing that ended with res.
func (ar *armedRule) recordRun(runID string, started time.Time, res *rules.RunResult) {
	out := res.Outcome
	if out.Status == rules.StatusCancelled && errors.Is(ar.s.ctx.Err(), context.Canceled) {
		out = pilotage.Outcome{OK: false, Status: rules.StatusInterrupted, Error: "the server stopped during the firing"}
	}
	steps := res.Steps
	if !out.OK {
		res = nil // no output
	}
	ar.record(runID, started, out, res, steps)
}

// checkBroken re-checks referenced entries when the device catalog moved
// (a firing on an unchanged catalog costs one comparison). Promoted bodies
// are immutable and scopes are fixed, so the device generation is the key.
func (ar *armedRule) checkBroken() string {
	e := ar.s.e
	gen := e.cat.view(ar.principal).devGen + 1 // +1: 0 means never checked
	ar.mu.Lock()
	if gen == ar.checkedGen {
		reason := ar.broken
		ar.mu.Unlock()
		return reason
	}
	ar.mu.Unlock()
	reason := ar.brokenReason(e)
	ar.mu.Lock()
	ar.checkedGen = gen
	changed := reason != ar.broken
	ar.broken = reason
	ar.mu.Unlock()
	if changed {
		if err := e.store.SetRuleBroken(context.Background(), ar.name, reason); err != nil {
			e.log.Warn("marking rule broken", "rule", ar.name, "err", err)
		}
		if reason != "" {
			e.log.Warn("rule is broken", "rule", ar.name, "reason", reason)
		}
	}
	return reason
}

func (ar *armedRule) recordSkipped(tf rules.TriggerFire, why string) {
	steps := []pilotage.TraceStep{{ID: "triggers", Outcome: pilotage.Outcome{OK: true, Status: rules.StepSuccess},
		Decisions: []pilotage.Decision{{At: "triggers", Took: tf.ID, Because: tf.Because}}}}
	ar.record(storage.NewRunID(), ar.s.e.Now(), pilotage.Outcome{OK: true, Status: rules.StatusSkipped, Error: why}, nil, steps)
}

// record hands the firing's run to the recorder (never blocks dispatch).
// res, when not nil, gives the output {"calls": …, "vars": …} of a firing
// that ended ok.
func (ar *armedRule) record(runID string, started time.Time, out pilotage.Outcome, res *rules.RunResult, steps []pilotage.TraceStep) {
	e := ar.s.e
	now := e.Now()
	fr := newFiringRecord(storage.Run{ID: runID, Principal: ar.principal.Name, Rule: ar.name, Ref: ar.ref, Kind: "firing",
		Status: out.Status, OK: out.OK, Started: started, Ended: now, Level: pilotage.LevelFull,
		Expires: now.Add(e.cfg.Retention)}, out, res, steps, !ar.waits)
	e.rec.addItem(&fr.item) // the recorder announces it once committed
}

// newFiringRecord is the record of a firing that ended with out (or is
// running): its run row, its trace of steps and, when res is not nil, its
// output. mayEnd: the firing does not wait, so a finished one is final.
func newFiringRecord(run storage.Run, out pilotage.Outcome, res *rules.RunResult, steps []pilotage.TraceStep, mayEnd bool) *firingRecord {
	if steps == nil {
		steps = []pilotage.TraceStep{}
	}
	fr := &firingRecord{}
	fr.trace = pilotage.Trace{Level: pilotage.LevelFull, Steps: steps}
	fr.env = envelope{RunID: run.ID, Outcome: out, Trace: &fr.trace}
	if res != nil {
		calls := res.Calls
		if calls == nil {
			calls = []rules.CallRecord{}
		}
		fr.out = firingOutput{calls: calls, vars: res.Vars}
		fr.env.Output = &fr.out
	}
	running := out.Status == rules.StatusRunning
	fr.item = recItem{run: run, env: &fr.env, announce: !running, final: mayEnd && !running, owned: true}
	return fr
}

// firingRecord is what a firing hands the recorder, in one allocation.
type firingRecord struct {
	item  recItem
	env   envelope
	trace pilotage.Trace
	out   firingOutput
}

// firingOutput is the output of a firing that ended ok: {"calls": [...],
// "vars": {...}} (vars {} when the run set none). It encodes as that map
// would, through encoding/json and appendOutput alike.
type firingOutput struct {
	calls []rules.CallRecord // not nil
	vars  map[string]any
}

func (o *firingOutput) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"calls": o.calls, "vars": orEmptyMap(o.vars)})
}
