package model

import (
	"github.com/pilothouse/pilothouse/rules/internal/clock"

	"context"
	"time"
)

// World is everything a running body may touch. The engine provides a live
// World (MQTT, real timers); test runs use SimWorld (scratch state, virtual
// clock, no side effect). The interpreter never reaches past it.
type World interface {
	// Now is the world's clock (virtual in a test run).
	Now() time.Time
	// State returns the current value of a state entry.
	State(id string) (any, bool)
	// Call invokes a callable catalog entry of kind action. It returns the
	// step output (nil is fine) or an error that fails the step.
	Call(ctx context.Context, id string, args map[string]any) (any, error)
	// Sleep waits d on the world's clock, or until ctx ends.
	Sleep(ctx context.Context, d time.Duration) error
	// Wait blocks until req is met (met=true), its timeout passes
	// (met=false), or ctx ends (err).
	Wait(ctx context.Context, req *WaitRequest) (met bool, err error)
	// Automation resolves a callable entry of kind automation to its
	// compiled promoted body, for expanded sub-program calls.
	Automation(id string) (*Compiled, bool)
}

// WaitRequest is one wait step as the World sees it.
type WaitRequest struct {
	StepID string // the qualified trace id of the wait step
	// Check reports whether the waited-for condition holds now. It is nil
	// for event waits. The World re-checks it whenever state changes.
	Check func() bool
	// Entities are the state ids Check depends on (for live subscriptions).
	Entities []string
	// Event, when set, is an event entry id; EventValue filters its value.
	Event      string
	EventValue Value
	For        time.Duration // the condition must hold this long
	Timeout    time.Duration // 0 = none (bounded by the run's wall time)
}

// TriggerFire is the trigger activation that starts a run.
type TriggerFire struct {
	ID      string // trigger id in the program ("" only for programs without triggers)
	Value   any    // the new value (state), the event payload, or the fire time
	From    any    // the previous value, when known
	Time    time.Time
	Because string // the decision's reason; "" = derived from the trigger
	// Detail is the trigger entry's input: in a test run, how the
	// scenario's trigger was simulated (its hold, its schedule).
	Detail map[string]any
	// NotFired, when set, is why the scenario's trigger would not fire (a
	// test run): the run ends not_triggered after the trigger's entry.
	NotFired string
}

// AvailabilityReader is a World that knows whether entries' devices are
// reachable. In a World without it every entry counts as available.
type AvailabilityReader interface {
	// Available reports false only when id's device is known to be
	// offline.
	Available(id string) bool
}

func AvailableIn(w World, id string) bool {
	ar, ok := w.(AvailabilityReader)
	return !ok || ar.Available(id)
}

// unavailableRead names the first entry whose state the condition reads
// while its device is offline, unless the expression asks available()
// of that entry itself ("" when there is none).
func UnavailableRead(x *Expr, w World) string {
	asked := map[string]bool{}
	for _, r := range x.Refs {
		if r.Fn == "available" {
			asked[r.ID] = true
		}
	}
	for _, r := range x.Refs {
		if r.Fn == "state" && !asked[r.ID] && !AvailableIn(w, r.ID) {
			return r.ID
		}
	}
	return ""
}

// placeOf is w's Place (UTC and no location when w does not say).
func PlaceOf(w World) clock.Place {
	var p clock.Place
	if pw, ok := w.(clock.Placed); ok {
		p = pw.Place()
	}
	if p.Zone == nil {
		p.Zone = time.UTC
	}
	return p
}
