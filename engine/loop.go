package engine

import (
	"context"
	"strings"
	"sync"
	"time"
)

// Rules can fire each other, or themselves, without end: a plug toggled on
// its own state sent 26,000 commands a second to the demo house; a helper
// toggled on its own state wrote 10,000 history rows a second and
// overwrote the logbook; two rules each writing what triggers the other do
// the same. A firing's depth counts the rule-caused hops that led to it: a
// change of a device a firing of depth d commanded within chainWindow
// fires at depth d+1; any other firing is at depth 0 (a sensor, a person,
// a schedule). No household chain is loopDepth hops deep: the rule whose
// firing would reach it is disabled, as its owner would, and says why.
const (
	chainWindow = 2 * time.Second
	loopDepth   = 20
)

// chainMark is the last command a firing sent to one device.
type chainMark struct {
	depth int // the commanding firing's depth + 1
	at    time.Time
}

// chains records the depth of the firing that last commanded each device,
// and each topic a command went to; every rule's firings share it. The
// topic catches what the device id does not: another entity on the
// device's state topic (a Home Assistant sensor on zigbee2mqtt/plug), a
// sensor on a notification channel's topic, a command published on
// another device's availability topic.
type chains struct {
	mu       sync.Mutex
	byDevice map[string]chainMark
	byTopic  map[string]chainMark // a command's topic, and that topic without "/set"
}

// deviceOf is the device part of an entry id ("living_plug.state").
func deviceOf(id string) string {
	d, _, _ := strings.Cut(id, ".")
	return d
}

// wrote notes that a firing of depth depth commanded entry id's device,
// on topic ("" when unknown, or a webhook).
func (c *chains) wrote(id, topic string, depth int, at time.Time) {
	m := chainMark{depth: depth + 1, at: at}
	c.mu.Lock()
	if c.byDevice == nil {
		c.byDevice, c.byTopic = map[string]chainMark{}, map[string]chainMark{}
	}
	c.byDevice[deviceOf(id)] = m
	if topic != "" {
		c.byTopic[topic] = m
		// Zigbee2MQTT: <base>/<device>/set and /set/<attribute> come back
		// on <base>/<device>.
		if base, ok := strings.CutSuffix(topic, "/set"); ok {
			c.byTopic[base] = m
		} else if i := strings.Index(topic, "/set/"); i > 0 {
			c.byTopic[topic[:i]] = m
		}
	}
	c.mu.Unlock()
}

// depthOf is the depth of a firing by a change of entry id, from a message
// on topic, at time at.
func (c *chains) depthOf(id, topic string, at time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := 0
	if m, ok := c.byDevice[deviceOf(id)]; ok && at.Sub(m.at) <= chainWindow {
		d = m.depth
	}
	if m, ok := c.byTopic[topic]; ok && topic != "" && at.Sub(m.at) <= chainWindow {
		d = max(d, m.depth)
	}
	return d
}

// stopLoop disables a rule whose firing would be loopDepth rule-caused
// hops deep, once, off the firing's path (disarming takes the scheduler's
// and the rule's locks), stored so that a restart does not start it again.
func (ar *armedRule) stopLoop(entity string) {
	if !ar.looped.CompareAndSwap(false, true) {
		return
	}
	e := ar.s.e
	why := "it was about to fire for the " + itoa(loopDepth) + "th time in a row because of a rule's command (" +
		entity + " changed within " + chainWindow.String() + " of a command to " + deviceOf(entity) +
		"): rules are firing each other or this one itself; fix the rule, then enable it"
	e.loopsStopped.Add(1)
	e.log.Error("rule disabled: rules keep firing each other", "rule", ar.name, "entity", entity, "depth", loopDepth)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := e.switchRule(ctx, ar.name, false, Event{Why: why, Principal: ar.principal.Name, Ref: ar.ref}); err != nil {
			e.log.Error("disabling a rule that keeps firing: not stored, disarmed until a restart", "rule", ar.name, "err", err)
			e.sched.setEnabled(ar.name, false) // the loop stops even so
		}
	}()
}
