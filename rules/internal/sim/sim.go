package sim

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/interp"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// Scenario is what a test run pretends: which trigger fires with what
// value, state overrides, a fixed clock, a timeline of what happens after
// (and before) the start, and assumptions about waits. It is decoded from
// execute's input by ParseScenario.
type Scenario struct {
	Trigger string         // trigger id; "" = the program's first trigger
	Value   any            // the trigger's value; nil = the trigger's `to`, else the current state
	From    any            // the previous value; nil = the trigger's `from`, else the current state
	State   map[string]any // state id → value, overriding the live state
	Now     *time.Time     // the virtual clock at the start; nil = the start passed to NewSimWorld
	// Timeline is what happens on the virtual clock: state changes and
	// events at offsets from the start (negative: before it, which sets
	// what since() reads). Waits resolve from it, delays pass through it,
	// and a held trigger fires only if it holds through it.
	Timeline []TimelineEntry
	// LastRun is when the rule's body last ran, for its throttle (nil:
	// never).
	LastRun *TimeOrOffset
	// Waits forces how wait steps end, by qualified trace id ("loop#2") or
	// base step id: WaitMet or WaitTimeout. A forced result is not
	// simulated: the wait's entry is marked assumed (and a run that ends
	// well then ends assumed, not success). Without an entry a wait
	// resolves from the state and the timeline, or times out.
	Waits map[string]string
}

// TimelineEntry is one moment of a scenario's timeline: states that
// change and events that occur at At after the start.
type TimelineEntry struct {
	At    time.Duration
	State map[string]any // state id → new value
	Event map[string]any // event id → payload
	// Available sets the availability of entries' devices (entry id →
	// online), as the device's availability topic would.
	Available map[string]bool
	Index     int // its place in the scenario's list (diagnostics)
}

// TimeOrOffset is a moment given as a time or as an offset from the
// start of the run.
type TimeOrOffset struct {
	At     *time.Time
	Offset time.Duration
}

// from resolves the moment against the start.
func (t TimeOrOffset) from(start time.Time) time.Time {
	if t.At != nil {
		return *t.At
	}
	return start.Add(t.Offset)
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
	Clock       time.Time
	waits       map[string]string
	effects     func(actionID string, args map[string]any) map[string]any
	scratch     map[string]any
	automations map[string]*model.Compiled
	calls       []interp.CallRecord
	place       clock.Place
	// changed is when each state last changed in the simulation (the
	// scenario, a call's effect); changedBase answers for the others.
	changed     map[string]time.Time
	changedBase func(id string) (time.Time, bool)
	// timeline is the scenario's timeline on the virtual clock; next is
	// the first entry not applied yet.
	timeline []simEntry
	next     int
	// assumed names the wait entries whose result the scenario forced
	// (qualified trace id → what it said).
	assumed       map[string]string
	lastRun       *time.Time // the scenario's last_run, resolved
	lastRunOffset bool       // it was given as an offset from the start
	// preview, when set, computes what a call would publish; a test run
	// shows it in the call's output.
	preview func(ctx context.Context, id string, args map[string]any) (any, error)
	// avail is the availability an availability trigger's activation
	// or the timeline set, by device (devKey); availBase answers for the
	// others (available.go).
	avail     map[string]bool
	availBase func(id string) bool
	deviceOf  func(id string) (string, bool)
	// selectBase resolves selectors against the caller's live catalog
	// (nil: the set validation found).
	selectBase func(kind pilotage.Kind, s *model.Selector) []string
	// checkCall checks a call's arguments as the real call would (the
	// action's input schema), so computed arguments fail here as there.
	checkCall func(id string, args map[string]any) error
	// stateEffects, when set, predicts calls whose effect depends on
	// the world's state (a helper's toggle): see SetStateEffects.
	stateEffects StateEffects
}

// StateEffects predicts the effect of a call whose outcome depends on the
// state it finds (a helper's toggle or increment): the state changes
// (state id → value) read through state at now, what follows the call on
// its own (later: a timer's end, a finish's event), handled false when id
// is not its to predict, or the error the real call would give.
type StateEffects func(id string, args map[string]any, now time.Time, state func(id string) (any, bool)) (changes map[string]any, later []Later, handled bool, err error)

// Later is what a simulated call makes happen on its own on the virtual
// clock (a timer started now ends then): at At, if every state of If
// still has its value (the timer was not cancelled or started again),
// the states of State change and the events of Event occur.
type Later struct {
	At               time.Time
	If, State, Event map[string]any
}

// SetStateEffects makes f predict calls before the effects NewSimWorld
// was given.
func (w *SimWorld) SetStateEffects(f StateEffects) {
	w.mu.Lock()
	w.stateEffects = f
	w.mu.Unlock()
}

// SetPreview makes every call's output carry what it would publish
// ("publishes"), computed by preview (the live call's own code); a call
// preview refuses fails as the live call would.
func (w *SimWorld) SetPreview(preview func(ctx context.Context, id string, args map[string]any) (any, error)) {
	w.mu.Lock()
	w.preview = preview
	w.mu.Unlock()
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
	w := &SimWorld{base: base, Clock: start, waits: sc.Waits, effects: effects, scratch: map[string]any{},
		changed: map[string]time.Time{}, assumed: map[string]string{}}
	if sc.LastRun != nil {
		t := sc.LastRun.from(start)
		w.lastRun, w.lastRunOffset = &t, sc.LastRun.At == nil
	}
	for _, e := range sc.Timeline {
		w.timeline = append(w.timeline, simEntry{at: start.Add(e.At), state: e.State, event: e.Event, avail: e.Available})
	}
	// The past first (since() reads it), then the scenario's state at
	// the start, then what happens at the start itself.
	for w.next < len(w.timeline) && w.timeline[w.next].at.Before(start) {
		w.Clock = w.timeline[w.next].at
		w.pastLocked(w.timeline[w.next])
		w.next++
	}
	w.Clock = start
	for k, v := range sc.State {
		w.setLocked(k, v)
	}
	w.advanceLocked(start)
	return w
}

// SetPlace sets the world's time zone and location (for schedules, time
// and sun conditions); the clock is read in that zone from then on.
func (w *SimWorld) SetPlace(p clock.Place) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.place = p
	if p.Zone != nil {
		w.Clock = w.Clock.In(p.Zone)
	}
}

// Place is the world's time zone and location (see SetPlace).
func (w *SimWorld) Place() clock.Place {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.place
}

// Now is the virtual clock.
func (w *SimWorld) Now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.Clock
}

// State reads the scratch state first, then the base.
func (w *SimWorld) State(id string) (any, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stateLocked(id)
}

func (w *SimWorld) stateLocked(id string) (any, bool) {
	if !w.availableLocked(id) {
		return nil, true // an offline device's state reads null, as live
	}
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
	if old, ok := w.stateLocked(id); !ok || !model.SameValue(old, v) {
		w.changed[id] = w.Clock
	}
	w.scratch[id] = v
}

// SetCallCheck makes calls check their arguments with f first.
func (w *SimWorld) SetCallCheck(f func(id string, args map[string]any) error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.checkCall = f
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
// state and returns {"simulated": true} (with "publishes" when a preview
// is set). Nothing is published.
func (w *SimWorld) Call(ctx context.Context, id string, args map[string]any) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := map[string]any{"simulated": true}
	w.mu.Lock()
	preview, check := w.preview, w.checkCall
	w.mu.Unlock()
	if check != nil {
		if err := check(id, args); err != nil {
			return nil, err // the real call would fail here too
		}
	}
	if preview != nil {
		msgs, err := preview(ctx, id, args)
		if err != nil {
			return nil, err
		}
		out["publishes"] = msgs
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var changes map[string]any
	if w.stateEffects != nil {
		ch, later, handled, err := w.stateEffects(id, args, w.Clock, w.stateLocked)
		if err != nil {
			return nil, err // the real call would fail here too
		}
		defer w.scheduleLocked(later) // once the call's own changes are made
		if handled && ch == nil {
			ch = map[string]any{}
		}
		if handled {
			out["sets"] = ch // what the call changes, for the trace to show
		}
		changes = ch
	}
	w.calls = append(w.calls, interp.CallRecord{ID: id, Args: args, Output: out, At: w.Clock})
	if changes == nil && w.effects != nil {
		changes = w.effects(id, args)
	}
	if changes == nil {
		changes = w.fallbackEffects(id, args)
	}
	for k, v := range changes {
		w.setLocked(k, v)
	}
	return out, nil
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
func (w *SimWorld) Calls() []interp.CallRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]interp.CallRecord(nil), w.calls...)
}

// SetAutomation makes a promoted automation's compiled body callable.
func (w *SimWorld) SetAutomation(id string, c *model.Compiled) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.automations == nil {
		w.automations = map[string]*model.Compiled{}
	}
	w.automations[id] = c
}

// Automation resolves a promoted automation set with SetAutomation.
func (w *SimWorld) Automation(id string) (*model.Compiled, bool) {
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
	if v, ok := w.avail[w.devKey(id)]; ok {
		return v
	}
	return w.availBase == nil || w.availBase(id)
}

// SetDeviceOf tells the world which device each entry belongs to, so
// that availability set for one entry holds for all of its device's
// entries, as live (nil: each entry stands for itself).
func (w *SimWorld) SetDeviceOf(f func(id string) (string, bool)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deviceOf = f
}

// devKey is the key of id's device in avail.
func (w *SimWorld) devKey(id string) string {
	if w.deviceOf != nil {
		if dev, ok := w.deviceOf(id); ok {
			return "device:" + dev
		}
	}
	return id
}

// setAvailLocked sets the availability of id's device.
func (w *SimWorld) setAvailLocked(id string, on bool) {
	if w.avail == nil {
		w.avail = map[string]bool{}
	}
	w.avail[w.devKey(id)] = on
}

// watched is what a trigger watches now: its entry's availability for an
// availability trigger, else its state.
func (w *SimWorld) watched(t *model.RunTrigger) any {
	if t.Kind() == model.TriggerAvailable {
		return w.Available(t.Watched())
	}
	v, _ := w.State(t.Watched())
	return v
}
