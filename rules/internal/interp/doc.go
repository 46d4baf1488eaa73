// Package interp runs a compiled program's body against a World, within its
// limits, and records the trace.
//
// A firing reads top to bottom in interp.go (Run, the trigger's entry, the
// step loop) and call.go (the call step, its pending tail and
// RunResult.Finish); the conditions (with if and choose), the other steps and
// the trace's rendering each have a file named for them.
package interp
