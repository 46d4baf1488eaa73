package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// Mode bounds when a program sets none.
const defaultModeMax = 10

// fire starts a firing of the trigger's rule according to its mode.
func (at *armedTrigger) fire(value, prev any, because string) {
	ar := at.r
	e := ar.s.e
	tf := rules.TriggerFire{ID: at.t.ID, Value: value, From: prev, Time: e.Now(), Because: because}
	ar.mu.Lock()
	if ar.stopped {
		ar.mu.Unlock()
		return
	}
	mode := ar.c.Program.Mode
	max := ar.c.Program.Max
	if max <= 0 {
		max = defaultModeMax
	}
	switch mode {
	case rules.ModeRestart:
		for _, f := range ar.running {
			f.cancel()
		}
	case rules.ModeQueued:
		if len(ar.running) > 0 {
			if len(ar.queue) >= max {
				ar.mu.Unlock()
				ar.recordSkipped(tf, "queue full (max "+itoa(max)+")")
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
	ar.startLocked(tf)
	ar.mu.Unlock()
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// startLocked launches one firing; ar.mu is held.
func (ar *armedRule) startLocked(tf rules.TriggerFire) {
	s := ar.s
	ctx, cancel := context.WithTimeout(s.ctx, s.e.cfg.Limits.MaxWall)
	f := &firing{cancel: cancel, done: make(chan struct{})}
	ar.running = append(ar.running, f)
	s.wg.Add(1)
	s.work.run(func() {
		defer s.wg.Done()
		defer close(f.done)
		defer cancel()
		ar.run(ctx, tf)
		ar.mu.Lock()
		for i, x := range ar.running {
			if x == f {
				ar.running = append(ar.running[:i:i], ar.running[i+1:]...)
				break
			}
		}
		var next *rules.TriggerFire
		if len(ar.queue) > 0 && !ar.stopped {
			n := ar.queue[0]
			ar.queue = ar.queue[1:]
			next = &n
		}
		if next != nil {
			ar.startLocked(*next)
		}
		ar.mu.Unlock()
	})
}

// run executes the body once on the live world and records the firing.
func (ar *armedRule) run(ctx context.Context, tf rules.TriggerFire) {
	e := ar.s.e
	runID := storage.NewRunID()
	started := e.Now()
	if reason := ar.checkBroken(); reason != "" {
		ar.record(runID, started, pilotage.Outcome{OK: false, Status: rules.StatusBroken, Error: reason}, nil, nil)
		return
	}
	if ar.waits {
		// A body that can take time is recorded as running first, so a
		// crash in the middle leaves a record that the next start marks
		// interrupted.
		ar.record(runID, started, pilotage.Outcome{OK: false, Status: rules.StatusRunning, Error: "the firing is running"}, nil, nil)
	}
	w := &liveWorld{e: e, p: ar.principal}
	res := rules.Run(ctx, ar.c, w, rules.RunInput{Trigger: tf, Params: ar.params, Limits: e.cfg.Limits})
	out := res.Outcome
	if out.Status == rules.StatusCancelled && errors.Is(ar.s.ctx.Err(), context.Canceled) {
		out = pilotage.Outcome{OK: false, Status: rules.StatusInterrupted, Error: "the server stopped during the firing"}
	}
	var output any
	if out.OK {
		calls := res.Calls
		if calls == nil {
			calls = []rules.CallRecord{}
		}
		output = map[string]any{"calls": calls, "vars": orEmptyMap(res.Vars)}
	}
	ar.record(runID, started, out, output, res.Steps)
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
func (ar *armedRule) record(runID string, started time.Time, out pilotage.Outcome, output any, steps []pilotage.TraceStep) {
	e := ar.s.e
	if steps == nil {
		steps = []pilotage.TraceStep{}
	}
	env := &envelope{RunID: runID, Outcome: out, Output: output, Trace: &pilotage.Trace{Level: pilotage.LevelFull, Steps: steps}}
	now := e.Now()
	e.rec.add(storage.Run{ID: runID, Principal: ar.principal.Name, Rule: ar.name, Ref: ar.ref, Kind: "firing",
		Status: out.Status, OK: out.OK, Started: started, Ended: now, Level: pilotage.LevelFull,
		Expires: now.Add(e.cfg.Retention)}, env)
	if out.Status != rules.StatusRunning {
		e.notify(Event{Type: "firing", Rule: ar.name, RunID: runID, Status: out.Status, OK: out.OK, Time: now})
	}
}

// takesTime reports whether a body contains a delay or a wait (anywhere):
// such firings can span a restart.
func takesTime(steps []*rules.Step) bool {
	for _, st := range steps {
		switch st.Kind {
		case rules.StepDelay, rules.StepWait:
			return true
		}
		if takesTime(st.Then) || takesTime(st.Else) || takesTime(st.Default) || takesTime(st.Do) {
			return true
		}
		for _, arm := range st.Choose {
			if takesTime(arm.Do) {
				return true
			}
		}
	}
	return false
}
