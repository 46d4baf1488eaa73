package sched

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/pilothouse/pilothouse/rules"
)

// Hooks for the engine's tests of the firing path, which need a whole
// house (broker, catalog, storage) and so live in package engine.

// SetBaseline gives state id the value it had before the start, as
// loadBaselines reads it from the state history.
func (s *Scheduler) SetBaseline(id string, v any, recorded bool) {
	s.bmu.Lock()
	defer s.bmu.Unlock()
	if s.baselines == nil {
		s.baselines = map[string]baseline{}
	}
	s.baselines[id] = baseline{v: v, recorded: recorded}
}

// Here is whether the rule's firings run on the goroutine that fires them.
func (ar *Rule) Here() *atomic.Bool { return &ar.here }

// Waiting reports whether one firing runs and its command, sent without
// waiting, has not had its end yet.
func (ar *Rule) Waiting() bool {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return len(ar.running) == 1 && ar.running[0].waiting
}

// StartFiring makes a firing of tf, counted as running, for the caller to
// run (on its World, under its Context) and end (Acked, Returned).
func (ar *Rule) StartFiring(tf rules.TriggerFire) *Firing {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.startLocked(tf, 0)
}

// Context is what the firing runs under.
func (f *Firing) Context() context.Context { return f.ctx }

// World is the world the firing runs on.
func (f *Firing) World() *World { return &f.world }

// Returned is the end of the firing's run (see returned).
func (f *Firing) Returned(res *rules.RunResult, runID string, started time.Time) (pending bool) {
	return f.returned(res, runID, started)
}
