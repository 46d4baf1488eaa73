package engine

import (
	"context"
	"time"

	"github.com/pilothouse/pilothouse/rules"
)

// Throttles: a rule with a throttle runs its body at most once per
// window. The window opens when a firing passes its conditions; firings
// that pass them while it is open end throttled. Its start survives
// restarts: a rule re-armed at start-up resumes it from the latest stored
// firing whose body ran.

// bodyLessStatuses are the firing statuses whose body did not start.
var bodyLessStatuses = []string{rules.StatusConditionsNotMet, rules.StatusSkipped, rules.StatusThrottled,
	rules.StatusBroken, rules.StatusDenied, rules.StatusValidationError}

// lastBodyStart is when the rule's body last started, as stored (zero
// when never, or when storage cannot say: the window then starts afresh).
func (s *scheduler) lastBodyStart(rule string) time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	t, ok, err := s.e.store.LastFiringStart(ctx, rule, bodyLessStatuses...)
	if err != nil {
		s.e.log.Warn("reading the last firing for the throttle", "rule", rule, "err", err)
	}
	if !ok || err != nil {
		return time.Time{}
	}
	return t
}

// throttleGate is the rule's rules.RunInput.Throttle: it opens a window
// at now unless one is open.
func (ar *armedRule) throttleGate(now time.Time) (until time.Time, throttled bool) {
	d := ar.c.Throttle()
	ar.mu.Lock()
	defer ar.mu.Unlock()
	if !ar.lastBody.IsZero() && now.Before(ar.lastBody.Add(d)) {
		return ar.lastBody.Add(d).In(ar.s.e.cfg.TimeZone), true
	}
	ar.lastBody = now
	return time.Time{}, false
}
