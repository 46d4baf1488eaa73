package rules

import (
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
