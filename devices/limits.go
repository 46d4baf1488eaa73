package devices

import (
	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/mqtt"
)

// What the catalog reads of one message is bounded in bytes, whatever the
// broker lets through (an external broker may have no bound at all): a
// payload over the bound is refused (HandleMessage checks it first),
// logged and counted (Refusals), and the catalog keeps what it had.
const (
	// DefaultMaxPayload bounds Zigbee2MQTT's bridge/devices and
	// bridge/event (the largest real payloads: 4–6 KB per device).
	DefaultMaxPayload = mqtt.DefaultMaxPacketBytes
	// maxEntityPayload bounds a discovery config and a state payload
	// (real ones are below 10 KB), or Options.MaxPayload when smaller.
	maxEntityPayload = 256 << 10
)

// Refusals counts what the catalog refused to read, for /healthz.
type Refusals struct {
	// OversizedMessages: payloads over their bound (not read), and
	// Zigbee2MQTT device lists over maxZ2MDevices.
	OversizedMessages uint64 `json:"oversized_messages"`
	// TemplateWorkSkipped: template renderings one message's work budget
	// (MsgJBudget) did not cover; their states keep their values.
	TemplateWorkSkipped uint64 `json:"template_work_skipped"`
	// TemplateWorkThrottled: template renderings skipped because their
	// topic's templates, or all topics' together, did more work than they
	// may per second; their states keep their values and say why.
	TemplateWorkThrottled uint64 `json:"template_work_throttled"`
	// TemplateFailures: renderings that failed (over their work budget, a
	// type error, …); their states keep their values. LastTemplateFailure
	// names the latest one's state and says why.
	TemplateFailures    uint64 `json:"template_failures"`
	LastTemplateFailure string `json:"last_template_failure,omitempty"`
	// Z2MGroupListsRefused: Zigbee2MQTT bridge/groups lists refused
	// (malformed, or over z2m.MaxGroups or z2m.MaxGroupMembers); the
	// catalog keeps the previous list, and the log says where it is wrong.
	Z2MGroupListsRefused uint64 `json:"z2m_group_lists_refused"`
	// BridgeDevicesOverBound: devices of the last Zigbee2MQTT device list
	// not modelled for a bound of its work (z2m.MaxExposes,
	// MaxExposeDepth, MaxListExposes); each says why in its description.
	BridgeDevicesOverBound uint64 `json:"bridge_devices_over_bound"`
}

// Refusals returns the counters of what the catalog refused to read.
func (c *Catalog) Refusals() Refusals {
	r := Refusals{OversizedMessages: c.refused.Oversized.Load(), TemplateWorkSkipped: c.refused.Skipped.Load(),
		TemplateWorkThrottled: c.refused.Throttled.Load(), TemplateFailures: c.refused.Failed.Load(),
		Z2MGroupListsRefused: c.refused.Groups.Load(), BridgeDevicesOverBound: uint64(c.overBound.Load())}
	if p := c.refused.LastFailure.Load(); p != nil {
		r.LastTemplateFailure = *p
	}
	return r
}

// logSkipped logs a message whose renderings went past its work budget,
// the 1st, 2nd, 4th, 8th, … such message. Called under the ingest lock.
func (c *Catalog) logSkipped(topic string, skipped int) {
	c.refused.SkippedMsgs++
	if k := c.refused.SkippedMsgs; k&(k-1) == 0 {
		c.log.Warn("home assistant templates not rendered: the message used up its template work budget; their states keep their values",
			"topic", topic, "skipped", skipped, "budget", model.MsgJBudget, "messages", k, "renderings_skipped", c.refused.Skipped.Load())
	}
}

// logThrottled logs a message whose renderings went past the template
// work per second, the 1st, 2nd, 4th, 8th, … such message. Called under
// the ingest lock.
func (c *Catalog) logThrottled(topic string, throttled int) {
	c.refused.ThrottledMsgs++
	if k := c.refused.ThrottledMsgs; k&(k-1) == 0 {
		c.log.Warn("home assistant templates not rendered: template work over its rate; their states keep their values",
			"topic", topic, "throttled", throttled, "topic_rate", model.TopicWorkRate, "rate", model.WorkRate, "messages", k,
			"renderings_throttled", c.refused.Throttled.Load())
	}
}
