package sched

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/pilotage"
)

// A trigger by selector that holds ("for") keeps one window per state it
// addresses, as Home Assistant does for a trigger on a list of entities:
// each state must stay for the duration on its own, and the firing names
// the one that did (trigger.entity).

// window is the open window of entity ("" = the trigger's one window);
// at.mu is held.
func (at *Trigger) window(entity string) *heldWindow {
	if entity == "" || at.hold == nil {
		return at.hold
	}
	return at.hold.each[entity]
}

// heldUntil is when the trigger's earliest open window fires if its state
// holds.
func (at *Trigger) heldUntil() (time.Time, bool) {
	at.mu.Lock()
	defer at.mu.Unlock()
	var until time.Time
	for _, w := range append([]*heldWindow{at.hold}, at.holdEach()...) {
		if w != nil && !w.deadline.IsZero() && (until.IsZero() || w.deadline.Before(until)) {
			until = w.deadline
		}
	}
	return until, !until.IsZero()
}

// holdEach lists a trigger by selector's open windows; at.mu is held.
func (at *Trigger) holdEach() []*heldWindow {
	if at.hold == nil {
		return nil
	}
	out := make([]*heldWindow, 0, len(at.hold.each))
	for _, w := range at.hold.each {
		out = append(out, w)
	}
	return out
}

// setWindow records (w != nil) or forgets entity's window; at.mu is held.
func (at *Trigger) setWindow(entity string, w *heldWindow) {
	switch {
	case entity == "":
		at.hold = w
	case w != nil:
		if at.hold == nil {
			at.hold = &heldWindow{each: map[string]*heldWindow{}}
		}
		at.hold.each[entity] = w
	case at.hold != nil:
		delete(at.hold.each, entity)
	}
}

// windowID names entity's window in the pending table.
func (at *Trigger) windowID(entity string) string {
	if entity == "" {
		return at.holdID()
	}
	return at.holdID() + "@" + entity
}

// closeWindow cancels entity's window (see closeHold); at.mu is held.
func (at *Trigger) closeWindow(entity string, forget bool) {
	if w := at.window(entity); w != nil {
		w.timer.Stop()
		at.setWindow(entity, nil)
	}
	if forget {
		at.r.s.pend.Delete(at.windowID(entity))
	}
}

// observeHeld applies a change of one of its states to a held trigger by
// selector: the change closes that state's window when it leaves what the
// trigger holds, and opens one when it matches.
func (at *Trigger) observeHeld(ch devices.Change, matched, restored bool, depth int) {
	at.mu.Lock()
	defer at.mu.Unlock()
	if w := at.window(ch.ID); w != nil && !at.t.Keeps(w.left, w.entered, ch.Value) {
		at.closeWindow(ch.ID, true)
	}
	if matched && at.window(ch.ID) == nil {
		because := at.describeOf(ch.ID, ch, restored) + " and held for " + at.t.For().String()
		at.openWindow(ch.ID, ch.Value, ch.Prev, because, at.r.s.d.Now().Add(at.t.For()), depth)
	}
}

// selects reports whether the trigger addresses state id now, in its
// rule owner's scope: a window whose state left the area fires nothing.
func (at *Trigger) selects(id string) bool {
	ids := at.r.s.d.Cat.View(at.r.principal).Select(pilotage.KindState, at.t.Selector())
	_, found := slices.BinarySearch(ids, id)
	return found
}

// resumeWindows reopens, as the trigger is armed, the windows persisted
// before a restart whose state is known and still held; the others are
// forgotten, with a log line. s.mu is held.
func (at *Trigger) resumeWindows() {
	s := at.r.s
	prefix := at.holdID() + "@"
	for id, saved := range s.savedHolds {
		entity, ok := strings.CutPrefix(id, prefix)
		if !ok {
			continue
		}
		delete(s.savedHolds, id)
		var st heldState
		var v any
		if s.d.Devs != nil {
			v, _ = at.currentOf(entity)
		}
		if v == nil || json.Unmarshal(saved.State, &st) != nil || !at.t.Keeps(st.Left, st.Value, v) {
			s.pend.Delete(id)
			s.d.Log.Info("a held window did not resume after the restart: its state is unknown or changed", "rule", at.r.name, "trigger", at.t.ID(), "state", entity)
			continue
		}
		at.mu.Lock()
		if at.window(entity) == nil {
			because := at.changedText(entity, st.Value) + " before the restart and the window held"
			at.openWindow(entity, st.Value, st.Left, because, saved.Deadline, 0)
		}
		at.mu.Unlock()
	}
}
