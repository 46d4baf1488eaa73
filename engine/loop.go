package engine

import (
	"context"
	"strings"
	"sync"
	"time"
)

// A rule that commands the device whose change fires it can fire itself
// without end: a plug toggled on its own state sent 26,000 commands a
// second to the demo house, a helper toggled on its own state wrote 10,000
// history rows a second and overwrote the logbook. loopGuard counts the
// firings a change of a device the rule commanded within loopWindow
// caused; loopStrikes of them in a row disable the rule, as its owner
// would, and say so. A rule that converges (brightness set to what it
// is) fires itself once or twice and resets the count.
const (
	loopWindow  = 2 * time.Second
	loopStrikes = 20
)

// loopGuard is one armed rule's record of the devices it commanded.
type loopGuard struct {
	mu     sync.Mutex
	last   map[string]time.Time // device → the rule's last command to it
	streak int                  // firings in a row caused by such a device
}

// deviceOf is the device part of an entry id ("living_plug.state").
func deviceOf(id string) string {
	d, _, _ := strings.Cut(id, ".")
	return d
}

// wrote notes a command of the rule to entry id's device.
func (g *loopGuard) wrote(id string, at time.Time) {
	g.mu.Lock()
	if g.last == nil {
		g.last = map[string]time.Time{}
	}
	g.last[deviceOf(id)] = at
	g.mu.Unlock()
}

// caused counts a firing by a change of entry id at time at: looping
// when the rule's own commands caused loopStrikes firings in a row (the
// firing is not run), first for the one that reached the bound.
func (g *loopGuard) caused(id string, at time.Time) (looping, first bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t, ok := g.last[deviceOf(id)]; ok && at.Sub(t) <= loopWindow {
		g.streak++
		return g.streak >= loopStrikes, g.streak == loopStrikes
	}
	g.streak = 0
	return false, false
}

// stopLoop disables a rule that keeps firing itself, off the firing's
// path (disarming takes the scheduler's and the rule's locks), stored so
// that a restart does not start it again.
func (ar *armedRule) stopLoop(entity string) {
	e := ar.s.e
	why := "it fired itself " + itoa(loopStrikes) + " times in a row: each of its commands to " + deviceOf(entity) +
		" changed " + entity + ", which fires it again; fix the rule, then enable it"
	e.loopsStopped.Add(1)
	e.log.Error("rule disabled: it keeps firing itself", "rule", ar.name, "entity", entity, "strikes", loopStrikes)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.store.SetRuleEnabled(ctx, ar.name, false); err != nil {
			e.log.Error("disabling a rule that keeps firing itself: not stored", "rule", ar.name, "err", err)
		}
		e.sched.setEnabled(ar.name, false)
		e.notify(Event{Type: "rule", Rule: ar.name, Status: "disabled", Why: why, OK: false, Time: e.Now(),
			Principal: ar.principal.Name, Ref: ar.ref})
	}()
}
