// Package loopguard remembers which rule-caused hops led to a change: the
// depth of the firing that last commanded each device and topic.
//
// Rules can fire each other, or themselves, without end. A firing's depth
// counts the rule-caused hops that led to it: a change of a device a
// firing of depth d commanded within Window fires at depth d+1; any other
// firing is at depth 0 (a sensor, a person, a schedule). The engine stops
// a rule whose firing would be too deep.
package loopguard

import (
	"strings"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/access"
)

// Window is how long after a command a change of its device counts as
// caused by it.
const Window = 2 * time.Second

// chainMark is the last command a firing sent to one device.
type chainMark struct {
	depth int // the commanding firing's depth + 1
	at    time.Time
}

// Chains records the depth of the firing that last commanded each device,
// and each topic a command went to; every rule's firings share it. The
// topic catches what the device id does not: another entity on the
// device's state topic (a Home Assistant sensor on zigbee2mqtt/plug), a
// sensor on a notification channel's topic, a command published on
// another device's availability topic.
type Chains struct {
	mu       sync.Mutex
	byDevice map[string]chainMark
	byTopic  map[string]chainMark // a command's topic, and that topic without "/set"
}

// Wrote notes that a firing of depth depth commanded entry id's device,
// on topic ("" when unknown, or a webhook).
func (c *Chains) Wrote(id, topic string, depth int, at time.Time) {
	m := chainMark{depth: depth + 1, at: at}
	c.mu.Lock()
	if c.byDevice == nil {
		c.byDevice, c.byTopic = map[string]chainMark{}, map[string]chainMark{}
	}
	c.byDevice[access.DeviceOf(id)] = m
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

// DepthOf is the depth of a firing by a change of entry id, from a message
// on topic, at time at.
func (c *Chains) DepthOf(id, topic string, at time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := 0
	if m, ok := c.byDevice[access.DeviceOf(id)]; ok && at.Sub(m.at) <= Window {
		d = m.depth
	}
	if m, ok := c.byTopic[topic]; ok && topic != "" && at.Sub(m.at) <= Window {
		d = max(d, m.depth)
	}
	return d
}
