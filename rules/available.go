package rules

import (
	"strconv"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Availability: whether the device of a state or event entry is
// reachable (its availability topic says online). Rules see it through
// the `available` trigger and the available() function; the state of an
// entry whose device is offline reads null, and a condition that reads
// it is not met (Home Assistant: a condition on an unavailable entity is
// false), with the reason in its trace entry.

// AvailabilityReader is a World that knows whether entries' devices are
// reachable. In a World without it every entry counts as available.
type AvailabilityReader interface {
	// Available reports false only when id's device is known to be
	// offline.
	Available(id string) bool
}

func availableIn(w World, id string) bool {
	ar, ok := w.(AvailabilityReader)
	return !ok || ar.Available(id)
}

func availablePhrase(v any) string {
	if b, ok := v.(bool); ok && !b {
		return "went offline"
	}
	return "came back online"
}

// availableTrigger checks an availability trigger: a state or event
// entry, and a `to` that is true (online) or false (offline).
func (c *checker) availableTrigger(t *Trigger) {
	if _, tmpl := c.refSite(t.Entity, t.Ptr+"/available", pilotage.KindState, pilotage.KindEvent); t.Entity == "" || tmpl {
		return
	}
	c.lookup(t.Entity, t.Ptr+"/available", nil, "available", pilotage.KindState, pilotage.KindEvent)
	if _, ok := t.To.V.(bool); t.To.Set && !ok {
		c.d.add(CodeUnreachableValue, t.Ptr+"/to", "true (online) or false (offline)", "availability is true or false, never %s", compactJSON(t.To.V))
	}
}

// unavailableRead names the first entry whose state the condition reads
// while its device is offline, unless the expression asks available()
// of that entry itself ("" when there is none).
func unavailableRead(x *Expr, w World) string {
	asked := map[string]bool{}
	for _, r := range x.Refs {
		if r.Fn == "available" {
			asked[r.ID] = true
		}
	}
	for _, r := range x.Refs {
		if r.Fn == "state" && !asked[r.ID] && !availableIn(w, r.ID) {
			return r.ID
		}
	}
	return ""
}

// SetAvailableBase gives the test run the live availability of entries
// (nil: every entry is available).
func (w *SimWorld) SetAvailableBase(f func(id string) bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.availBase = f
}

// Available is the simulated availability: an availability trigger's
// fired value, else the live one.
func (w *SimWorld) Available(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.availableLocked(id)
}

func (w *SimWorld) availableLocked(id string) bool {
	if v, ok := w.avail[id]; ok {
		return v
	}
	return w.availBase == nil || w.availBase(id)
}

// watched is what a trigger watches now: its entry's availability for an
// availability trigger, else its state.
func (w *SimWorld) watched(t *RunTrigger) any {
	if t.Kind() == TriggerAvailable {
		return w.Available(t.entity)
	}
	v, _ := w.State(t.entity)
	return v
}

// branchCond evaluates an if or choose condition: false, saying why, when
// it reads the state of an entry whose device is offline (as a
// condition does).
func (r *interp) branchCond(f *frame, x *Expr) (bool, string, error) {
	if id := unavailableRead(x, r.w); id != "" {
		return false, x.Src + " = false: " + id + " is unavailable (its device is offline)", nil
	}
	b, err := x.EvalBool(f.env)
	return b, x.Src + " = " + strconv.FormatBool(b), err
}
