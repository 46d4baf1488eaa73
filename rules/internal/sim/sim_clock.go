package sim

import (
	"context"
	"slices"
	"time"

	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/interp"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// The virtual clock of a SimWorld and the scenario's timeline on it:
// delays pass through the timeline, waits resolve from it (or time out),
// and entries apply in order as the clock reaches them.

// simEntry is a timeline entry at its time on the virtual clock.
type simEntry struct {
	at    time.Time
	state map[string]any
	event map[string]any
	avail map[string]bool // entry id → its device online
	cond  map[string]any  // applied only if these states have these values (Later.If)
}

// scheduleLocked puts what calls make happen later on the timeline, after
// the entries of the same moment; one due now happens now.
func (w *SimWorld) scheduleLocked(later []Later) {
	for _, l := range later {
		e := simEntry{at: l.At, state: l.State, event: l.Event, cond: l.If}
		if !e.at.After(w.Clock) {
			w.applyLocked(e)
			continue
		}
		i := w.next
		for i < len(w.timeline) && !w.timeline[i].at.After(e.at) {
			i++
		}
		w.timeline = slices.Insert(w.timeline, i, e)
	}
}

// applyLocked applies one entry at the virtual now: its states change
// (a different value is a change since() counts from), its events occur
// (state(event) reads the last payload).
// It reports false for an entry whose cond no longer holds: nothing
// happens.
func (w *SimWorld) applyLocked(e simEntry) bool {
	for id, want := range e.cond {
		if got, _ := w.stateLocked(id); core.CompactJSON(got) != core.CompactJSON(want) {
			return false // what scheduled it was undone (a timer cancelled)
		}
	}
	for _, id := range core.SortedKeys(e.avail) {
		w.setAvailLocked(id, e.avail[id])
	}
	for _, id := range core.SortedKeys(e.state) {
		w.setLocked(id, e.state[id])
	}
	for _, id := range core.SortedKeys(e.event) {
		w.scratch[id], w.changed[id] = e.event[id], w.Clock
	}
	return true
}

// pastLocked applies an entry before the start: the history since() and
// last_changed() read. A state's first such entry is a change at its time
// even when it sets the value the state has now ("opened 5 minutes ago"
// while it reads open): the scenario says when it changed.
func (w *SimWorld) pastLocked(e simEntry) {
	for id := range e.state {
		if _, ok := w.changed[id]; !ok {
			w.changed[id] = w.Clock
		}
	}
	w.applyLocked(e)
}

// advanceLocked moves the clock to t, applying the entries up to it.
func (w *SimWorld) advanceLocked(t time.Time) {
	for w.next < len(w.timeline) && !w.timeline[w.next].at.After(t) {
		if e := w.timeline[w.next]; e.at.After(w.Clock) {
			w.Clock = e.at
		}
		w.applyLocked(w.timeline[w.next])
		w.next++
	}
	if t.After(w.Clock) {
		w.Clock = t
	}
}

func (w *SimWorld) advanceTo(t time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.advanceLocked(t)
}

// nextEntry is the time of the next entry not applied (ok false: none).
func (w *SimWorld) nextEntry() (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.next >= len(w.timeline) {
		return time.Time{}, false
	}
	return w.timeline[w.next].at, true
}

// Sleep advances the virtual clock by d, through the timeline.
func (w *SimWorld) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.advanceTo(w.Now().Add(d))
	return nil
}

// Wait resolves a wait on the virtual clock: from the state now and the
// timeline (met when the condition has held for its For, or the event
// occurs), else it times out at its timeout. A wait the scenario forces
// (Scenario.Waits) ends as it says and is recorded as assumed.
func (w *SimWorld) Wait(ctx context.Context, req *model.WaitRequest) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	now := w.Now()
	end := now.Add(req.Timeout)
	if req.Timeout <= 0 {
		end = now.Add(core.DefaultLimits.MaxWall)
	}
	if want, forced := w.forced(req.StepID); forced {
		w.mu.Lock()
		w.assumed[req.StepID] = want
		w.mu.Unlock()
		if want == WaitTimeout {
			w.advanceTo(end)
			return false, nil
		}
		w.advanceTo(now.Add(req.For))
		return true, nil
	}
	if req.Event != "" {
		return w.waitEvent(req, end), nil
	}
	return w.waitHeld(req, end), nil
}

func (w *SimWorld) forced(stepID string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	want, ok := w.waits[stepID]
	if !ok {
		want, ok = w.waits[interp.BaseStepID(stepID)]
	}
	return want, ok
}

// waitEvent finds the first matching event of the timeline before end.
func (w *SimWorld) waitEvent(req *model.WaitRequest, end time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.next < len(w.timeline) && !w.timeline[w.next].at.After(end) {
		e := w.timeline[w.next]
		if e.at.After(w.Clock) {
			w.Clock = e.at
		}
		applied := w.applyLocked(e)
		w.next++
		if v, ok := e.event[req.Event]; applied && ok && model.EventMatches(req.EventValue, v) {
			return true
		}
	}
	w.advanceLocked(end)
	return false
}

// waitHeld steps through the timeline until the condition has held for
// req.For, or end.
func (w *SimWorld) waitHeld(req *model.WaitRequest, end time.Time) bool {
	holds := func() bool { return req.Check != nil && req.Check() }
	var since time.Time // when the condition began to hold (zero: it does not)
	if holds() {
		since = w.Now()
	}
	for {
		next, more := w.nextEntry()
		if !since.IsZero() {
			due := since.Add(req.For)
			if !due.After(end) && (!more || !due.After(next)) {
				w.advanceTo(due)
				return true
			}
		}
		if !more || next.After(end) {
			break
		}
		w.advanceTo(next)
		switch {
		case !holds():
			since = time.Time{}
		case since.IsZero():
			since = next
		}
	}
	w.advanceTo(end)
	return false
}

// Assumed reports whether the scenario forced the result of the wait
// entry qid (and what it said).
func (w *SimWorld) Assumed(qid string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	want, ok := w.assumed[qid]
	return want, ok
}
