package rules

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Scenario is what a test run pretends: which trigger fires with what
// value, state overrides, a fixed clock and how waits end. It is decoded
// from execute's input by ParseScenario.
type Scenario struct {
	Trigger string         // trigger id; "" = the program's first trigger
	Value   any            // the trigger's value; nil = the trigger's `to`, else the current state
	From    any            // the previous value; nil = the trigger's `from`, else the current state
	State   map[string]any // state id → value, overriding the live state
	Now     *time.Time     // the virtual clock at the start; nil = the start passed to NewSimWorld
	// Waits says how wait steps end, by qualified trace id ("loop#2") or
	// base step id: WaitMet or WaitTimeout. Without an entry a wait is met
	// after its `for` duration (at once without one), unless `for` is
	// longer than its timeout, in which case it times out.
	Waits map[string]string
}

// Scenario wait results.
const (
	WaitMet     = "met"
	WaitTimeout = "timeout"
)

// SimWorld is a scratch World for test runs: a virtual clock advanced only
// by delays and waits, state reads that see the scenario's overrides and
// the simulated effects of earlier calls, and calls that are recorded
// instead of published. It has no side effect outside itself.
type SimWorld struct {
	mu          sync.Mutex
	base        func(id string) (any, bool)
	now         time.Time
	waits       map[string]string
	effects     func(actionID string, args map[string]any) map[string]any
	scratch     map[string]any
	automations map[string]*Compiled
	calls       []CallRecord
	place       Place
	// changed is when each state last changed in the simulation (the
	// scenario, a call's effect); changedBase answers for the others.
	changed     map[string]time.Time
	changedBase func(id string) (time.Time, bool)
}

// NewSimWorld builds a scratch world over base (the live state reader, may
// be nil) starting at start (or sc.Now). effects maps an action call to the
// state changes it would cause (state id → new value); when it is nil or
// returns nil, the fallback convention applies: a call of "<device>.set"
// with argument k sets state "<device>.k" if that state exists.
func NewSimWorld(base func(id string) (any, bool), start time.Time, sc Scenario, effects func(actionID string, args map[string]any) map[string]any) *SimWorld {
	if sc.Now != nil {
		start = *sc.Now
	}
	w := &SimWorld{base: base, now: start, waits: sc.Waits, effects: effects, scratch: map[string]any{}, changed: map[string]time.Time{}}
	for k, v := range sc.State {
		w.setLocked(k, v)
	}
	return w
}

// SetPlace sets the world's time zone and location (for schedules, time
// and sun conditions); the clock is read in that zone from then on.
func (w *SimWorld) SetPlace(p Place) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.place = p
	if p.Zone != nil {
		w.now = w.now.In(p.Zone)
	}
}

// Place is the world's time zone and location (see SetPlace).
func (w *SimWorld) Place() Place {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.place
}

// Now is the virtual clock.
func (w *SimWorld) Now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.now
}

// State reads the scratch state first, then the base.
func (w *SimWorld) State(id string) (any, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stateLocked(id)
}

func (w *SimWorld) stateLocked(id string) (any, bool) {
	if v, ok := w.scratch[id]; ok {
		return v, true
	}
	if w.base != nil {
		return w.base(id)
	}
	return nil, false
}

// SetState overrides one state in the scratch world, changed now on the
// virtual clock.
func (w *SimWorld) SetState(id string, v any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.setLocked(id, v)
}

// setLocked sets a state; a different value is a change at the virtual
// now (since() counts from it).
func (w *SimWorld) setLocked(id string, v any) {
	if old, ok := w.stateLocked(id); !ok || !SameValue(old, v) {
		w.changed[id] = w.now
	}
	w.scratch[id] = v
}

// SetChangedBase answers LastChanged for the states the simulation has
// not changed (the live house's last changes).
func (w *SimWorld) SetChangedBase(f func(id string) (time.Time, bool)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.changedBase = f
}

// LastChanged is when a state last changed: in the simulation, else as
// the base says.
func (w *SimWorld) LastChanged(id string) (time.Time, bool) {
	w.mu.Lock()
	t, ok := w.changed[id]
	base := w.changedBase
	w.mu.Unlock()
	if ok {
		return t, true
	}
	if base != nil {
		return base(id)
	}
	return time.Time{}, false
}

// Call records the call, applies its simulated effects to the scratch
// state and returns {"simulated": true}. Nothing is published.
func (w *SimWorld) Call(ctx context.Context, id string, args map[string]any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, CallRecord{ID: id, Args: args, Output: map[string]any{"simulated": true}, At: w.now})
	var changes map[string]any
	if w.effects != nil {
		changes = w.effects(id, args)
	}
	if changes == nil {
		changes = w.fallbackEffects(id, args)
	}
	for k, v := range changes {
		w.setLocked(k, v)
	}
	return map[string]any{"simulated": true}, nil
}

func (w *SimWorld) fallbackEffects(id string, args map[string]any) map[string]any {
	device, ok := strings.CutSuffix(id, ".set")
	if !ok {
		return nil
	}
	out := map[string]any{}
	for k, v := range args {
		sid := device + "." + k
		if _, exists := w.stateLocked(sid); exists {
			out[sid] = v
		}
	}
	return out
}

// Calls returns the calls made so far.
func (w *SimWorld) Calls() []CallRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]CallRecord(nil), w.calls...)
}

// Sleep advances the virtual clock by d.
func (w *SimWorld) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.advance(d)
	return nil
}

func (w *SimWorld) advance(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.now = w.now.Add(d)
}

// Wait ends the wait as the scenario says (see Scenario.Waits), advancing
// the virtual clock by the time it would have taken.
func (w *SimWorld) Wait(ctx context.Context, req *WaitRequest) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	want, ok := w.waits[req.StepID]
	if !ok {
		want = w.waits[BaseStepID(req.StepID)]
	}
	if want == WaitTimeout || (req.Timeout > 0 && req.For > req.Timeout) {
		w.advance(req.Timeout)
		return false, nil
	}
	w.advance(req.For)
	return true, nil
}

// SetAutomation makes a promoted automation's compiled body callable.
func (w *SimWorld) SetAutomation(id string, c *Compiled) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.automations == nil {
		w.automations = map[string]*Compiled{}
	}
	w.automations[id] = c
}

// Automation resolves a promoted automation set with SetAutomation.
func (w *SimWorld) Automation(id string) (*Compiled, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	c, ok := w.automations[id]
	return c, ok
}

// ScenarioError is a scenario that does not fit the program; Path is a
// JSON Pointer into execute's input (for an input_binding diagnostic).
type ScenarioError struct {
	Path    string
	Message string
}

func (e *ScenarioError) Error() string { return e.Message }

// FireFor picks the trigger activation a scenario describes: its trigger
// (default the program's first), value (default the trigger's `to`, else
// the current state of its entity, else a value inside a numeric
// trigger's bounds, else the clock for time triggers) and from. When w is a
// *SimWorld, a state trigger's entity takes the fired value unless the
// scenario's state overrides it. Because is "test run: scenario".
func FireFor(c *Compiled, sc Scenario, w World) (TriggerFire, error) {
	fire := TriggerFire{Time: w.Now(), Because: "test run: scenario", Value: sc.Value, From: sc.From}
	if c == nil {
		return fire, &ScenarioError{"", "no program"}
	}
	if len(c.triggers) == 0 {
		if sc.Trigger != "" {
			return fire, &ScenarioError{"/scenario/trigger", fmt.Sprintf("unknown trigger %q: the program has no triggers", sc.Trigger)}
		}
		return fire, nil
	}
	t := &c.triggers[0]
	if sc.Trigger != "" {
		if t = c.trigger(sc.Trigger); t == nil {
			return fire, &ScenarioError{"/scenario/trigger", fmt.Sprintf("unknown trigger %q: want one of %s", sc.Trigger, strings.Join(c.triggerIDs(), ", "))}
		}
	}
	fire.ID = t.id
	kind := t.Kind()
	cur, hasCur := any(nil), false
	if t.entity != "" && kind != TriggerEvent {
		cur, hasCur = w.State(t.entity)
	}
	if fire.Value == nil {
		fire.Value = defaultFireValue(t, cur, hasCur, fire.Time)
	}
	if fire.From == nil {
		if t.fromSet {
			fire.From = t.from
		} else if hasCur {
			fire.From = cur
		}
	}
	if sw, ok := w.(*SimWorld); ok && kind == TriggerEvent {
		sw.mu.Lock()
		sw.scratch[t.entity], sw.changed[t.entity] = fire.Value, sw.now
		sw.mu.Unlock()
	}
	if sw, ok := w.(*SimWorld); ok && (kind == TriggerState || kind == TriggerNumeric) {
		sw.mu.Lock()
		if _, overridden := sw.scratch[t.entity]; !overridden {
			sw.setLocked(t.entity, fire.Value)
		}
		sw.mu.Unlock()
	}
	return fire, nil
}

func defaultFireValue(t *RunTrigger, cur any, hasCur bool, now time.Time) any {
	switch t.Kind() {
	case TriggerState, TriggerEvent:
		if list, ok := t.to.([]any); ok && t.Kind() == TriggerEvent && len(list) > 0 {
			return list[0]
		}
		if t.toSet {
			return t.to
		}
		return cur
	case TriggerNumeric:
		above, below := t.bounds()
		if x, ok := interpNumber(cur); ok && (above == nil || x > *above) && (below == nil || x < *below) {
			return cur
		}
		switch {
		case above != nil && below != nil:
			return (*above + *below) / 2
		case above != nil:
			return *above + 1
		case below != nil:
			return *below - 1
		}
		return cur
	}
	return now.Format(time.RFC3339)
}
