// Package cause carries who caused a call (a rule's principal, and the
// rule) down the context to the household's helpers, so their logbook
// lines are filed as that principal's. It is a leaf because the engine's
// scheduler sets it and the helpers, which cannot import the engine,
// read it.
package cause

import "context"

// Cause is who made a change: the principal's name and, for a rule's
// firing, the rule ("" each when unknown).
type Cause struct{ Who, Rule string }

type key struct{}

// With is ctx carrying who (and rule) as the cause of what is done with
// it.
func With(ctx context.Context, who, rule string) context.Context {
	return context.WithValue(ctx, key{}, Cause{Who: who, Rule: rule})
}

// Of is the cause ctx carries (zero: none, e.g. a timer or the
// configuration).
func Of(ctx context.Context) Cause {
	c, _ := ctx.Value(key{}).(Cause)
	return c
}
