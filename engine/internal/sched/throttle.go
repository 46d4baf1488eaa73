package sched

import (
	"context"
	"time"

	"github.com/pilothouse/pilothouse/rules"
)

// Throttles: a rule with a throttle runs its body at most once per
// window. The window opens when a firing passes its conditions; firings
// that pass them while it is open end throttled. Its start survives
// restarts and crashes: it is stored before the body runs, and a rule
// re-armed at start-up resumes it from that (or from the latest stored
// firing whose body ran, for windows opened before it was stored).

// bodyLessStatuses are the firing statuses whose body did not start.
var bodyLessStatuses = []string{rules.StatusConditionsNotMet, rules.StatusSkipped, rules.StatusThrottled,
	rules.StatusBroken, rules.StatusDenied, rules.StatusValidationError}

// throttleWriteTimeout bounds the write that opens a window: past it the
// body runs anyway (the window holds in memory) and the fault is logged.
const throttleWriteTimeout = 2 * time.Second

// lastBodyStart is when the rule's body last started, as stored: the
// later of the recorded window start and the latest stored firing whose
// body ran (zero when never, or when storage cannot say: the window then
// starts afresh).
func (s *Scheduler) lastBodyStart(rule string) time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var last time.Time
	t, ok, err := s.d.Store.LastFiringStart(ctx, rule, bodyLessStatuses...)
	if err != nil {
		s.d.Log.Warn("reading the last firing for the throttle", "rule", rule, "err", err)
	}
	if ok && err == nil {
		last = t
	}
	t, ok, err = s.d.Store.ThrottleStart(ctx, rule)
	if err != nil {
		s.d.Log.Warn("reading the throttle window", "rule", rule, "err", err)
	}
	if ok && err == nil && t.After(last) {
		last = t
	}
	return last
}

// throttleGate is the rule's rules.RunInput.Throttle: it opens a window
// at now unless one is open. Opening one is written through to storage
// before the body runs (one small write per window), so a crash right
// after the body's command went out still finds the window at the next
// start; the firing's own record is written later, in a batch.
func (ar *Rule) throttleGate(now time.Time) (until time.Time, throttled bool) {
	window := ar.c.Throttle()
	ar.mu.Lock()
	if !ar.lastBody.IsZero() && now.Before(ar.lastBody.Add(window)) {
		until := ar.lastBody.Add(window).In(ar.s.d.Zone)
		ar.mu.Unlock()
		return until, true
	}
	ar.lastBody = now
	ar.mu.Unlock()
	d := ar.s.d
	ctx, cancel := context.WithTimeout(context.Background(), throttleWriteTimeout)
	defer cancel()
	if err := d.Store.SetThrottleStart(ctx, ar.name, now); err != nil {
		d.Log.Warn("storing the throttle window (held in memory only: a restart may run the body again)",
			"rule", ar.name, "err", err)
	}
	return time.Time{}, false
}
