package sched

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/clocktext"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// Held ("for") windows survive restarts: when a window opens its deadline
// is written to the pending table; when it closes or fires the row goes.
// At start-up a rule's window whose state still holds resumes with its
// original deadline (firing at once if the deadline passed while the server
// was down); a window whose state no longer holds is dropped.

// holdID names a trigger's window in the pending table.
func (at *Trigger) holdID() string {
	return at.r.name + "/" + at.t.ID()
}

// heldWindow is an open "for" window: its timer and the change that
// opened it, the value it left and the one it entered
// (rules.RunTrigger.Keeps decides whether the window stays). It is made
// when a window opens, so an idle trigger keeps only a nil pointer.
type heldWindow struct {
	timer         *time.Timer
	deadline      time.Time // when it fires if the state holds
	left, entered any
	// each: a trigger by selector's windows, by state (its own timer
	// is nil).
	each map[string]*heldWindow
}

// openHold starts the window; at.mu is held. depth is the rule-caused
// hops that led to the change (loop.go), kept for the firing it holds.
func (at *Trigger) openHold(val, prev any, because string, deadline time.Time, depth int) {
	at.openWindow("", val, prev, because, deadline, depth)
}

// openWindow starts the window of entity (a trigger by selector holds
// each state it addresses on its own; "" is the trigger's one window);
// at.mu is held.
func (at *Trigger) openWindow(entity string, val, prev any, because string, deadline time.Time, depth int) {
	s := at.r.s
	d := time.Until(deadline)
	if d < 0 {
		d = 0
	}
	w := &heldWindow{left: prev, entered: val, deadline: deadline}
	at.setWindow(entity, w)
	w.timer = time.AfterFunc(d, func() {
		at.mu.Lock()
		if at.window(entity) != w {
			// Closed while this call waited for the lock: Stop came too late.
			at.mu.Unlock()
			return
		}
		at.setWindow(entity, nil)
		at.mu.Unlock()
		s.pend.Delete(at.windowID(entity))
		if entity != "" && !at.selects(entity) {
			s.d.Log.Info("a held window ended without firing: its state is no longer addressed by the trigger's selector", "rule", at.r.name, "trigger", at.t.ID(), "state", entity)
			return
		}
		at.fireDepth(depth, entity, val, prev, because)
	})
	state, _ := json.Marshal(heldState{Value: val, Left: prev})
	s.pend.Put(storage.Pending{ID: at.windowID(entity), Rule: at.r.name, Kind: "for", Deadline: deadline, State: state})
}

// heldState is a window's persisted change: the value it entered and the
// one it left (a trigger with from and no to holds until the state is back
// in it).
type heldState struct {
	Value any `json:"value"`
	Left  any `json:"left,omitempty"`
}

// closeHold cancels the window; at.mu is held. forget=false keeps the
// persisted deadline (server shutdown: the window resumes at the next start).
func (at *Trigger) closeHold(forget bool) {
	if w := at.hold; w != nil {
		for entity := range w.each {
			at.closeWindow(entity, forget)
		}
		if w.timer != nil {
			w.timer.Stop()
		}
		at.hold = nil
		if w.each != nil {
			return // a trigger by selector has no window of its own
		}
	}
	if forget {
		at.r.s.pend.Delete(at.holdID())
	}
}

// resumeHold opens a window at arming time when the watched state already
// satisfies the trigger: with the persisted deadline when one survived a
// restart, otherwise counted from the arming. A persisted window whose
// state no longer holds is dropped.
func (at *Trigger) resumeHold() {
	s := at.r.s
	d := s.d
	saved, hadSaved := s.savedHolds[at.holdID()] // s.mu is held (armLocked)
	delete(s.savedHolds, at.holdID())
	holds := false
	var val, left any
	if d.Devs != nil {
		if v, ok := at.current(); ok {
			holds, val, left = at.holdsAtArming(v, saved, hadSaved)
		} else if hadSaved {
			// Not reported since the start yet: the first value (a
			// baseline, see baseline.go) decides.
			s.savedHolds[at.holdID()] = saved
			return
		}
	}
	at.mu.Lock()
	defer at.mu.Unlock()
	if !holds {
		if hadSaved {
			at.closeHold(true)
		}
		return
	}
	if at.hold != nil {
		return
	}
	deadline := d.Now().Add(at.t.For())
	because := fmt.Sprintf("%s when the rule was armed and held for %s", at.wasText(at.t.Entity(), val), at.t.For())
	if hadSaved {
		deadline = saved.Deadline
		because = fmt.Sprintf("%s before the restart and the window held (due %s)", at.changedText(at.t.Entity(), val), clocktext.Text(deadline, d.Zone))
	}
	at.openHold(val, left, because, deadline, 0)
}

// holdsAtArming reports whether the value v opens (or keeps) the trigger's
// window as it is armed, and the change of that window: the value it
// entered and the one it left. A window persisted before a restart stays
// while the trigger Keeps it, with its own change; otherwise v must be one
// the trigger targets ("any change" and from alone have nothing to hold).
func (at *Trigger) holdsAtArming(v any, saved storage.Pending, hadSaved bool) (holds bool, entered, left any) {
	var st heldState
	if hadSaved && json.Unmarshal(saved.State, &st) == nil {
		return at.t.Keeps(st.Left, st.Value, v), st.Value, st.Left
	}
	if k := at.t.Kind(); (k == rules.TriggerState || k == rules.TriggerAvailable) && !at.t.Targets() {
		return false, v, nil
	}
	_, holds = at.t.Match(nil, v, false)
	return holds, v, nil
}

// keepOrDropSavedHold settles a window persisted before the start whose
// state changed to v while the server was down: it resumes when the
// trigger keeps it through v (from without to: v is not the value it
// left), else it is forgotten; s.mu is held.
func (at *Trigger) keepOrDropSavedHold(v any) {
	s := at.r.s
	saved, ok := s.savedHolds[at.holdID()]
	if !ok {
		return
	}
	delete(s.savedHolds, at.holdID())
	var st heldState
	if json.Unmarshal(saved.State, &st) != nil || !at.t.Keeps(st.Left, st.Value, v) {
		s.pend.Delete(at.holdID())
		return
	}
	at.mu.Lock()
	defer at.mu.Unlock()
	if at.hold == nil {
		because := fmt.Sprintf("%s before the restart and the window held (due %s)", at.changedText(at.t.Entity(), st.Value), clocktext.Text(saved.Deadline, s.d.Zone))
		at.openHold(st.Value, st.Left, because, saved.Deadline, 0)
	}
}
