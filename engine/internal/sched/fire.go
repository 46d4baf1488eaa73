package sched

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine/internal/bounds"
	"github.com/pilothouse/pilothouse/engine/internal/recorder"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// A change fires a rule, read top to bottom as it happens: the triggers
// watching the changed entity (OnChange, observe), the rule's mode
// (fireDepth), the firing, run here or on a worker (startLocked, Do, run),
// its last command's end (returned, Acked, settle), then its record and
// its end (recordRun, record, end). Arming is scheduler.go's.

// OnChange is called on the ingestion goroutine for every state change and
// event: one map lookup finds the triggers that watch this entity.
func (s *Scheduler) OnChange(ch devices.Change) {
	if ch.Kind == devices.ChangeAvailability {
		s.onAvailability(ch)
		return
	}
	if ch.Kind != devices.ChangeState && ch.Kind != devices.ChangeEvent {
		return
	}
	s.mu.RLock()
	ats := s.index[ch.ID] // never changed in place: no copy needed (see disarmLocked)
	sels, selVer := s.selIdx.Snapshot()
	s.mu.RUnlock()
	restored := false
	switch {
	case ch.Kind != devices.ChangeState:
	case ch.Prev == nil: // its first value since the start: perhaps a baseline (baseline.go)
		if b, ok := s.takeBaseline(ch.ID); ok {
			if restored = s.applyBaseline(&ch, b, ats); !restored {
				return
			}
		}
	case len(sels) > 0:
		// Triggers by selector see only changes from a value: a state's
		// first value (after a start, or from a device that just joined)
		// is a baseline for them, as their states are only known once the
		// catalog is, so no baseline is read for them.
		if sel := s.selectedIn(ch.ID, sels, selVer); len(sel) > 0 {
			ats = append(ats[:len(ats):len(ats)], sel...)
		}
	}
	if ch.Offline && len(ats) > 0 {
		s.offlineChange(ats)
		return
	}
	for _, at := range ats {
		at.observe(ch, restored)
	}
}

// observe applies one change to a trigger: fire now, start or cancel a
// held window.
// restored: ch.Prev is the value recorded before the start.
func (at *Trigger) observe(ch devices.Change, restored bool) {
	t := at.t
	matched, _ := t.Match(ch.Prev, ch.Value, ch.Kind == devices.ChangeEvent)
	depth := 0
	if matched {
		if depth = at.r.s.chains.DepthOf(ch.ID, ch.Topic, at.r.s.d.Now()); depth >= loopDepth {
			at.r.stopLoop(ch.ID)
			return
		}
	}
	if t.For() <= 0 {
		if matched && t.Selector() != nil {
			at.fireDepth(depth, ch.ID, ch.Value, ch.Prev, at.describeOf(ch.ID, ch, restored))
		} else if matched {
			at.fireDepth(depth, "", ch.Value, ch.Prev, at.describe(ch, restored))
		}
		return
	}
	if t.Selector() != nil {
		at.observeHeld(ch, matched, restored, depth)
		return
	}
	at.mu.Lock()
	defer at.mu.Unlock()
	if w := at.hold; w != nil && !t.Keeps(w.left, w.entered, ch.Value) {
		at.closeHold(true)
	}
	if matched && at.hold == nil {
		at.openHold(ch.Value, ch.Prev, at.describe(ch, restored)+" and held for "+t.For().String(), at.r.s.d.Now().Add(t.For()), depth)
	}
}

// describe says why at fires for ch, for the trace.
func (at *Trigger) describe(ch devices.Change, restored bool) string {
	return at.describeOf(at.t.Entity(), ch, restored)
}

// describeOf says why at fires for ch of entity (the state a trigger by
// selector fires for).
func (at *Trigger) describeOf(entity string, ch devices.Change, restored bool) string {
	if at.t.Kind() != rules.TriggerAvailable {
		return describeChange(entity, ch, restored)
	}
	return at.changedText(entity, ch.Value)
}

func describeChange(entity string, ch devices.Change, restored bool) string {
	// Built in one buffer, not one allocation per part and a Sprintf.
	b := make([]byte, 0, len(entity)+48)
	b = append(b, entity...)
	if ch.Kind == devices.ChangeEvent {
		b = append(b, " fired "...)
	} else {
		b = append(b, " changed from "...)
		b = appendShown(b, ch.Prev)
		if restored {
			b = append(b, " (its value before the restart)"...)
		}
		b = append(b, " to "...)
	}
	b = appendShown(b, ch.Value)
	return string(b)
}

// maxShownValue bounds a value in a trigger's reason: every firing's
// record keeps the reason, skipped and cancelled ones too, and a bus value
// of 200 KB in each made a guest's refused firings hold gigabytes.
const maxShownValue = 256

// appendShown appends v's JSON, cut to maxShownValue bytes (at a whole
// character) with its full size said.
func appendShown(b []byte, v any) []byte {
	n := len(b)
	return shown.CutFrom(appendCompact(b, v), n, maxShownValue)
}

func compact(v any) string { return string(appendCompact(nil, v)) }

// appendCompact appends v's JSON, or fmt.Sprint(v) when it has none.
func appendCompact(b []byte, v any) []byte {
	n := len(b)
	b, err := pilotage.AppendJSON(b, v)
	if err != nil {
		return fmt.Append(b[:n], v)
	}
	return b
}

// Mode bounds when a program sets none.
const defaultModeMax = 10

// fire starts a firing of the trigger's rule according to its mode.
func (at *Trigger) fire(value, prev any, because string) {
	at.fireDepth(0, "", value, prev, because)
}

// queuedFire is a firing waiting for the running one (mode queued).
type queuedFire struct {
	tf    rules.TriggerFire
	depth int
}

// fireDepth fires the trigger, depth rule-caused hops deep (loop.go);
// entity names the state that fired a trigger by selector ("" for the
// others).
func (at *Trigger) fireDepth(depth int, entity string, value, prev any, because string) {
	ar := at.r
	d := ar.s.d
	tf := rules.TriggerFire{ID: at.t.ID(), Entity: entity, Value: value, From: prev, Time: d.Now().In(d.Zone), Because: because}
	ar.mu.Lock()
	if ar.stopped {
		ar.mu.Unlock()
		return
	}
	why, queued := ar.byModeLocked(tf, depth)
	if why == "" && !queued {
		why = ar.takeLive()
	}
	if why != "" {
		ar.skipLocked(tf, why)
		return
	}
	if queued {
		ar.mu.Unlock()
		return
	}
	f := ar.startLocked(tf, depth)
	ar.mu.Unlock()
	if !ar.here.Load() {
		ar.s.work.Run(f)
		return
	}
	start := time.Now()
	ar.s.work.RunHere(f)
	if took := time.Since(start); took > ar.s.SlowHere && ar.slowHere.Add(1) == SlowHereStrikes {
		ar.here.Store(false)
		d.Log.Warn("rule's firings now run on workers: its body took too long on the goroutine delivering events",
			"rule", ar.name, "took", took, "over", ar.s.SlowHere)
	}
}

// byModeLocked applies the rule's mode to a new firing (ar.mu held): why
// it is refused, or that it waits in the queue; else it may start.
func (ar *Rule) byModeLocked(tf rules.TriggerFire, depth int) (why string, queued bool) {
	max := ar.c.Max()
	if max <= 0 {
		max = defaultModeMax
	}
	switch ar.c.Mode() {
	case rules.ModeRestart:
		for _, f := range ar.running {
			f.stopLocked()
		}
	case rules.ModeQueued:
		if len(ar.running) == 0 {
			return "", false
		}
		// max counts the running firing and the waiting ones, as in Home
		// Assistant, so a ported max means the same.
		if len(ar.running)+len(ar.queue) >= max {
			return "queue full (max " + strconv.Itoa(max) + " running or waiting)", false
		}
		// A waiting firing holds its trigger's value (up to a whole
		// message): it counts against its principal's as a running one.
		if why := ar.takeLive(); why != "" {
			return why, false
		}
		ar.queue = append(ar.queue, queuedFire{tf, depth})
		return "", true
	case rules.ModeParallel:
		if len(ar.running) >= max {
			return "already running " + strconv.Itoa(max) + " times (max)", false
		}
	default: // single
		if len(ar.running) > 0 {
			return "already running (mode single)", false
		}
	}
	return "", false
}

// A rule whose body only ends in a command runs where its event is
// delivered (Rule.here), holding up the events behind it; one whose
// firings took longer than Scheduler.SlowHere (defaultSlowHere)
// SlowHereStrikes times runs on workers from then on.
const (
	defaultSlowHere = 10 * time.Millisecond
	SlowHereStrikes = 3
)

// startLocked makes one firing, counted as running; ar.mu is held. The
// caller runs it once ar.mu is released.
func (ar *Rule) startLocked(tf rules.TriggerFire, depth int) *Firing {
	s := ar.s
	ctx, cancel := context.WithTimeout(s.ctx, s.d.Limits.MaxWall)
	f := &Firing{ar: ar, tf: tf, depth: depth, ctx: ctx, cancel: cancel}
	f.world = World{d: s.d, p: ar.principal, f: f}
	if ar.hasCeiling {
		f.world.ceiling = &ar.ceiling
	}
	ar.running = append(ar.running, f)
	s.wg.Add(1)
	return f
}

// firing is one running execution of a rule body: the trigger that fired
// it, the world it runs on, and the context it runs under (the
// scheduler's, bounded by the limits' MaxWall; cancel ends it early, as a
// restart or the rule's removal does).
type Firing struct {
	ar     *Rule
	tf     rules.TriggerFire
	depth  int // rule-caused hops that led to it (loop.go)
	world  World
	ctx    context.Context
	cancel context.CancelFunc

	// A run left pending by its last command (run, then Acked): the
	// command, set once before the run returns, and the two ends, the
	// run's and the command's, that settle the firing whichever comes
	// second.
	sent    devices.Sent
	waiting bool // guarded by ar.mu: sent's end is still to come (stopLocked aborts it)
	res     *rules.RunResult
	runID   string
	started time.Time
	ackErr  error
	ends    atomic.Int32
}

// Limited: a body without delays and waits only waits for its commands'
// acknowledgements; it counts against bounds.MaxRunning.
func (f *Firing) Limited() bool { return !f.ar.waits }

// Do runs the firing (the pool's Task) and ends it, unless its last
// command waits for its acknowledgement: then it goes on without the
// goroutine, and ends on the acknowledgement (Acked, settle).
func (f *Firing) Do() {
	if !f.run() {
		f.end()
	}
}

// run executes the body once on the firing's live world and records it. A
// body whose last step is a command may end once that command is sent:
// run then reports true, and the firing is recorded and ended when the
// command's end comes (returned, settle).
func (f *Firing) run() (pending bool) {
	ar := f.ar
	d := ar.s.d
	runID := storage.NewRunID()
	started := d.Now()
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
	in := rules.RunInput{Trigger: f.tf, Params: ar.params, Limits: d.Limits, Cache: d.Rules, AsyncTail: !ar.waits}
	if ar.c.Throttle() > 0 {
		in.Throttle = ar.throttleGate
	}
	return f.returned(f.runShared(in), runID, started)
}

// runShared runs f's rule body with the operations its rule's and its
// principal's shares grant (bounds.TakeOps), gives back what it did not
// use, and says so when the shares cut the run short.
func (f *Firing) runShared(in rules.RunInput) *rules.RunResult {
	ar := f.ar
	full := ar.s.d.Limits.WithDefaults().MaxRunOps
	g := bounds.TakeOps(ar.opsShare(), ar.s.shares.Of(ar.principal.Name), ar.s.d.Now(), full)
	in.Limits.MaxRunOps = max(g.Ops, 1)
	res := rules.Run(f.ctx, ar.c, &f.world, in)
	g.Return(res.Ops)
	if g.Ops < full && res.Outcome.Status == rules.StatusLimitExceeded {
		res.Outcome.Error += fmt.Sprintf(" (this rule's firings share %d operations and %s's rules %d, refilled over %s: the others had used all but %d)",
			full, ar.principal.Name, bounds.PrincipalShares*full, bounds.ShareRefill, g.Ops)
	}
	return res
}

// opsShare is the rule's share, made at its first firing (a house holds
// thousands of rules that rarely fire).
func (ar *Rule) opsShare() *bounds.Share {
	if s := ar.share.Load(); s != nil {
		return s
	}
	ar.share.CompareAndSwap(nil, &bounds.Share{})
	return ar.share.Load()
}

// checkBroken re-checks referenced entries when the device catalog moved
// (a firing on an unchanged catalog costs one comparison). Promoted bodies
// are immutable and scopes are fixed, so the device generation is the key.
func (ar *Rule) checkBroken() string {
	d := ar.s.d
	gen := d.Cat.View(ar.principal).DevGen() + 1 // +1: 0 means never checked
	ar.mu.Lock()
	if gen == ar.checkedGen {
		reason := ar.broken
		ar.mu.Unlock()
		return reason
	}
	ar.mu.Unlock()
	reason := ar.BrokenReason()
	ar.mu.Lock()
	ar.checkedGen = gen
	changed := reason != ar.broken
	ar.broken = reason
	ar.mu.Unlock()
	if changed {
		if err := d.Store.SetRuleBroken(context.Background(), ar.name, reason); err != nil {
			d.Log.Warn("marking rule broken", "rule", ar.name, "err", err)
		}
		if reason != "" {
			d.Log.Warn("rule is broken", "rule", ar.name, "reason", reason)
		}
	}
	return reason
}

// sentAsync registers the firing's command sent without waiting (see
// World.CallAsync), aborted if the firing is stopped; at once if it
// already was.
func (f *Firing) sentAsync(sent devices.Sent) {
	f.ar.mu.Lock()
	f.sent = sent
	err := f.ctx.Err()
	f.waiting = err == nil
	f.ar.mu.Unlock()
	if err != nil {
		sent.Abort(err)
	}
}

// returned is the run's end: a result that is final is recorded; one left
// Pending by its last command waits for that command's end (settle), and
// returned reports true.
func (f *Firing) returned(res *rules.RunResult, runID string, started time.Time) (pending bool) {
	if !res.Pending() {
		f.ar.recordRun(runID, started, res)
		return false
	}
	f.res, f.runID, f.started = res, runID, started
	f.settle()
	return true
}

// Acked is the end of the firing's command sent without waiting: the
// connection tells it once (mqtt.Acker), on its reader, a timer's
// goroutine or an abort's; it must not block.
func (f *Firing) Acked(err error) {
	f.ackErr = err
	f.settle()
}

// settle is called by both ends of a pending firing, its run's return and
// its command's end, in either order (the acknowledgement may come before
// Run returns); the second finishes the run's result (in rules), records
// it and ends the firing.
func (f *Firing) settle() {
	if f.ends.Add(1) < 2 {
		return
	}
	err := f.ackErr
	if err != nil {
		err = CallError(f.sent.Err(err))
	}
	f.res.Finish(err)
	f.ar.recordRun(f.runID, f.started, f.res)
	f.end()
}

// recordRun records the firing that ended with res.
func (ar *Rule) recordRun(runID string, started time.Time, res *rules.RunResult) {
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

// record hands the firing's run to the recorder (never blocks dispatch).
// res, when not nil, gives the output {"calls": …, "vars": …} of a firing
// that ended ok.
func (ar *Rule) record(runID string, started time.Time, out pilotage.Outcome, res *rules.RunResult, steps []pilotage.TraceStep) {
	d := ar.s.d
	now := d.Now()
	fr := recorder.NewFiringRecord(storage.Run{ID: runID, Principal: ar.principal.Name, Rule: ar.name, Ref: ar.ref, Kind: "firing",
		Status: out.Status, OK: out.OK, Started: started, Ended: now, Level: pilotage.LevelFull,
		Expires: now.Add(d.Retention)}, out, res, steps, !ar.waits)
	d.Rec.AddItem(&fr.Item) // the recorder announces it once committed
}

// end lets the rule's next queued firing start, and hands the firing's
// slot on.
func (f *Firing) end() {
	ar, s := f.ar, f.ar.s
	defer s.wg.Done()
	f.cancel() // the deadline timer
	ar.mu.Lock()
	f.waiting = false // its command has had its end
	// In place: ar.running is only read and written under ar.mu, and
	// keeping its array spares an allocation per firing.
	if i := slices.Index(ar.running, f); i >= 0 {
		ar.running = slices.Delete(ar.running, i, i+1)
	}
	var next *Firing
	if len(ar.queue) > 0 && !ar.stopped {
		n := ar.queue[0]
		ar.queue = ar.queue[1:]
		next = ar.startLocked(n.tf, n.depth) // it holds its live firing since it was queued
	}
	ar.giveLive()
	ar.mu.Unlock()
	if next != nil {
		s.work.Run(next)
	}
	if f.Limited() {
		s.work.Release()
	}
}

// stopLocked cancels the firing (mode restart, the rule disarmed) and ends
// the wait of its command sent without waiting; ar.mu is held. That
// command's end is handled on a goroutine of its own, as ending the
// firing takes ar.mu.
func (f *Firing) stopLocked() {
	f.cancel()
	if f.waiting {
		go f.sent.Abort(context.Canceled)
		f.waiting = false
	}
}

// skipLocked releases ar.mu and records the firing it refused for why.
func (ar *Rule) skipLocked(tf rules.TriggerFire, why string) {
	ar.mu.Unlock()
	ar.recordSkipped(tf, why)
}

func (ar *Rule) recordSkipped(tf rules.TriggerFire, why string) {
	steps := []pilotage.TraceStep{{ID: "triggers", Outcome: pilotage.Outcome{OK: true, Status: rules.StepSuccess},
		Decisions: []pilotage.Decision{{At: "triggers", Took: tf.ID, Because: tf.Because}}}}
	ar.record(storage.NewRunID(), ar.s.d.Now(), pilotage.Outcome{OK: true, Status: rules.StatusSkipped, Error: why}, nil, steps)
}
