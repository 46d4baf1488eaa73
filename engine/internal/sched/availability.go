package sched

import (
	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/rules"
)

// Availability triggers watch whether an entry's device is reachable. The
// catalog reports availability per device; the few availability triggers
// are kept in one list and matched by their entry's device.

// onAvailability applies a device's availability change to the triggers
// watching one of its entries. The first report after a start (no
// previous value) is a baseline, as for states (baseline.go): it only
// opens the "for" windows it satisfies.
func (s *Scheduler) onAvailability(ch devices.Change) {
	if on, _ := ch.Value.(bool); !on {
		defer s.closeHoldsOf(ch.ID) // after the availability triggers saw it
	}
	s.mu.RLock()
	ats := s.avail
	s.mu.RUnlock()
	for _, at := range ats {
		if at.t.Selector() != nil {
			s.availSelected(at, ch)
			continue
		}
		if dev, ok := s.d.Devs.DeviceOf(at.t.Entity()); !ok || dev != ch.ID {
			continue
		}
		if ch.Prev == nil {
			if at.t.For() > 0 {
				s.mu.Lock()
				if at.r.enabled {
					at.resumeHold()
				}
				s.mu.Unlock()
			}
			continue
		}
		at.observe(devices.Change{Kind: devices.ChangeState, ID: at.t.Entity(), Value: ch.Value, Prev: ch.Prev, Time: ch.Time, Topic: ch.Topic}, false)
	}
}

// availSelected applies device ch.ID's availability change to an
// available trigger by selector, once for each state of that device it
// addresses now in its owner's scope (so a device that joined since it
// was armed is watched), each with a window of its own. A device's first
// report after a start is a baseline for it, as a state's first value is
// for state triggers by selector.
func (s *Scheduler) availSelected(at *Trigger, ch devices.Change) {
	if ch.Prev == nil {
		return
	}
	for _, id := range at.addressed() {
		if dev, ok := s.d.Devs.DeviceOf(id); ok && dev == ch.ID {
			at.observe(devices.Change{Kind: devices.ChangeState, ID: id, Value: ch.Value, Prev: ch.Prev, Time: ch.Time, Topic: ch.Topic}, false)
		}
	}
}

// unwatchAvailability drops at from the availability triggers; s.mu is
// held.
func (s *Scheduler) unwatchAvailability(at *Trigger) {
	for i, x := range s.avail {
		if x == at {
			s.avail = append(s.avail[:i:i], s.avail[i+1:]...)
			return
		}
	}
}

// current is what at watches now: its entry's availability (known once
// its device reported it) or its state's value.
func (at *Trigger) current() (any, bool) {
	return at.currentOf(at.t.Entity())
}

// currentOf is what at watches of entity now (see current).
func (at *Trigger) currentOf(entity string) (any, bool) {
	l, ok := at.r.s.d.Devs.Live(entity)
	if !ok {
		return nil, false
	}
	if at.t.Kind() == rules.TriggerAvailable {
		if l.Available == nil {
			return nil, false
		}
		return *l.Available, true
	}
	return l.Value, l.Value != nil
}

// A state trigger never fires on a device that reports itself offline, as
// in Home Assistant, where its entities are "unavailable": a state it sends
// meanwhile is kept as its value but fires nothing, and going offline
// breaks the "for" windows open on its states.

// offlineChange counts a change of an offline device and closes the
// windows of the triggers watching it.
func (s *Scheduler) offlineChange(ats []*Trigger) {
	s.offline.Add(1)
	for _, at := range ats {
		if at.t.Kind() == rules.TriggerAvailable || at.t.For() <= 0 {
			continue
		}
		at.mu.Lock()
		at.closeHold(true)
		at.mu.Unlock()
	}
}

// closeHoldsOf closes the "for" windows open on the states of device dev,
// which went offline.
func (s *Scheduler) closeHoldsOf(dev string) {
	s.mu.RLock()
	var ats []*Trigger
	for id, list := range s.index {
		if d, ok := s.d.Devs.DeviceOf(id); ok && d == dev {
			ats = append(ats, list...)
		}
	}
	s.mu.RUnlock()
	for _, at := range ats {
		if at.t.Kind() == rules.TriggerAvailable || at.t.For() <= 0 {
			continue
		}
		at.mu.Lock()
		at.closeHold(true)
		at.mu.Unlock()
	}
}

// OfflineChanges counts the state changes of devices that had said they
// were offline since the start: no trigger fired on them (/healthz).
func (s *Scheduler) OfflineChanges() uint64 { return s.offline.Load() }

// wasText says what entity's window held at arming: its value, or for an
// available trigger its device's reachability (not the entity's state).
func (at *Trigger) wasText(entity string, v any) string {
	if at.t.Kind() != rules.TriggerAvailable {
		return entity + " was " + compact(v)
	}
	if on, _ := v.(bool); on {
		return entity + "'s device was online"
	}
	return entity + "'s device was offline"
}

// changedText says what change opened entity's window, in the words of
// wasText.
func (at *Trigger) changedText(entity string, v any) string {
	if at.t.Kind() != rules.TriggerAvailable {
		return entity + " changed to " + compact(v)
	}
	if on, _ := v.(bool); on {
		return entity + "'s device came back online"
	}
	return entity + "'s device went offline"
}
