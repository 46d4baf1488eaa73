// Package interp runs a compiled program's body against a World, within its
// limits, and records the trace.
package interp
