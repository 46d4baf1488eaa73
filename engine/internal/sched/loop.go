package sched

import (
	"context"
	"strconv"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/access"
	"github.com/pilothouse/pilothouse/engine/internal/bounds"
)

// Rules can fire each other, or themselves, without end: a plug toggled on
// its own state sent 26,000 commands a second to the demo house; a helper
// toggled on its own state wrote 10,000 history rows a second and
// overwrote the logbook; two rules each writing what triggers the other do
// the same. The loop guard (engine/internal/bounds Chains) counts the
// rule-caused hops that led to a firing. No household chain is loopDepth
// hops deep: the rule whose firing would reach it is disabled, as its
// owner would, and says why.
const loopDepth = 20

// stopLoop disables a rule whose firing would be loopDepth rule-caused
// hops deep, once, off the firing's path (disarming takes the scheduler's
// and the rule's locks), stored so that a restart does not start it again.
func (ar *Rule) stopLoop(entity string) {
	if !ar.looped.CompareAndSwap(false, true) {
		return
	}
	s, d := ar.s, ar.s.d
	why := "it was about to fire for the " + strconv.Itoa(loopDepth) + "th time in a row because of a rule's command (" +
		entity + " changed within " + bounds.Window.String() + " of a command to " + access.DeviceOf(entity) +
		"): rules are firing each other or this one itself; fix the rule, then enable it"
	s.looped.Add(1)
	d.Log.Error("rule disabled: rules keep firing each other", "rule", ar.name, "entity", entity, "depth", loopDepth)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Host.Disable(ctx, ar, why); err != nil {
			d.Log.Error("disabling a rule that keeps firing: not stored, disarmed until a restart", "rule", ar.name, "err", err)
			s.SetEnabled(ar.name, false) // the loop stops even so
		}
	}()
}

// LoopsStopped counts the rules disabled since the start because they
// kept firing themselves or each other.
func (s *Scheduler) LoopsStopped() uint64 { return s.looped.Load() }
