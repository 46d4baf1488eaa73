package sched

import (
	"context"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine/internal/history"
	"github.com/pilothouse/pilothouse/rules"
)

// Restart baselines. A fresh catalog reports each state's first value as a
// change from null (or, when it arrived before the scheduler listened,
// not at all); for a rule that was installed before this start that
// value is a baseline, not a change (Home Assistant never triggers on
// bootstrap). The value the state history recorded before the start
// decides: the same value (or none recorded, or the history off) fires
// nothing; a different one is a change from the recorded value, and the
// trace says so. The history records each start's first values, so a
// change seen at one start is the value before the next. A first value
// that came with the retain flag (the broker's stored copy, sent as the
// catalog subscribes) is a baseline whatever was recorded: it may be
// older than the recorded value (a retained ON, then a plain OFF), and
// MQTT 3.1.1 carries no time to tell; a change made while the server was
// down fires when the device's own message says it.

// baselineBudget bounds the history reads of one start-up.
const baselineBudget = 5 * time.Second

// baseline is what a watched state read before this start.
type baseline struct {
	v        any
	recorded bool // the history had a value before this start
}

// loadBaselines reads, for every state a restored rule watches whose
// first value since the start has not arrived (or arrived, unsettled,
// before the scheduler listens), its last value recorded before the
// start. It runs at start-up before the scheduler subscribes to changes
// and returns the states already reported (see replayBaselines).
func (s *Scheduler) loadBaselines(ctx context.Context) (reported []string) {
	if s.d.Devs == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, baselineBudget)
	defer cancel()
	now := s.d.Now()
	var ids []string
	s.mu.RLock()
	for id, ats := range s.index {
		if watchesState(ats) {
			ids = append(ids, id)
		}
	}
	s.mu.RUnlock()
	found := make(map[string]baseline, len(ids))
	for _, id := range ids {
		before := now
		if l, ok := s.d.Devs.Live(id); ok && l.Value != nil {
			if !l.FirstValue {
				continue // changed since the start: later changes have a previous value
			}
			before = l.LastChanged // its arrival, which the history may hold already
			reported = append(reported, id)
		}
		b := baseline{}
		// With the history off nothing records the values seen from now
		// on: a row from when it was on would fire again at every start.
		if s.d.History && ctx.Err() == nil {
			if v, ok, err := s.d.Store.HistoryBefore(ctx, id, before); err != nil {
				s.d.Log.Warn("reading a state's value from before the start", "id", id, "err", err)
			} else if ok {
				b = baseline{v: history.Value(v), recorded: true}
			}
		}
		found[id] = b
	}
	s.bmu.Lock()
	s.baselines = found
	s.bmu.Unlock()
	return reported
}

// replayBaselines applies the first values that arrived before the
// scheduler subscribed, as if they arrived now; takeBaseline lets each
// state's first value act once. A state that changed again meanwhile
// had its change observed with a previous value: its baseline goes.
func (s *Scheduler) replayBaselines(reported []string) {
	for _, id := range reported {
		l, ok := s.d.Devs.Live(id)
		if ok && l.FirstValue && l.Value != nil {
			s.OnChange(devices.Change{Kind: devices.ChangeState, ID: id, Value: l.Value, Time: l.LastChanged, Retained: l.Retained})
			continue
		}
		s.bmu.Lock()
		delete(s.baselines, id)
		s.bmu.Unlock()
	}
}

func watchesState(ats []*Trigger) bool {
	for _, at := range ats {
		if k := at.t.Kind(); k == rules.TriggerState || k == rules.TriggerNumeric {
			return true
		}
	}
	return false
}

// takeBaseline returns and forgets the baseline of state id, whose first
// value (no previous one) just arrived.
func (s *Scheduler) takeBaseline(id string) (baseline, bool) {
	s.bmu.Lock()
	defer s.bmu.Unlock()
	b, ok := s.baselines[id]
	if ok {
		delete(s.baselines, id)
	}
	return b, ok
}

// applyBaseline decides what the first value after the start is for the
// triggers ats: it reports whether it is a change (then ch.Prev is the
// recorded value). A baseline opens the "for" windows it satisfies, as
// arming does, and is logged.
func (s *Scheduler) applyBaseline(ch *devices.Change, b baseline, ats []*Trigger) bool {
	changed := b.recorded && !history.Same(b.v, ch.Value)
	switch {
	case changed && ch.Retained:
		// The broker's stored copy, perhaps older than the recorded value
		// (a retained ON, then a plain OFF): no report of now.
		changed = false
		s.d.Log.Info("first value after the start is the broker's retained copy, a baseline, not a change", "id", ch.ID,
			"value", compact(ch.Value), "recorded", compact(b.v))
	case changed:
		ch.Prev = b.v
	default:
		s.d.Log.Info("first value after the start is a baseline, not a change", "id", ch.ID, "value", compact(ch.Value), "recorded", b.recorded)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, at := range ats {
		switch {
		case at.t.For() <= 0 || at.t.Kind() == rules.TriggerEvent || !at.r.enabled:
		case changed:
			at.keepOrDropSavedHold(ch.Value)
		default:
			at.resumeHold()
		}
	}
	return changed
}
