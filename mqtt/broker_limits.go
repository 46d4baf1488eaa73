package mqtt

import (
	"bytes"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"
)

// The embedded broker's memory bounds. mochi has no limit of its own on
// a packet's size nor on what it retains (retained messages live in
// memory until replaced or cleared): one 200 MB retained PUBLISH cost
// about 1 GB of RSS for good.
const (
	// DefaultMaxPacketBytes bounds one MQTT packet (a PUBLISH's topic,
	// properties and payload). The largest real payload, Zigbee2MQTT's
	// bridge/devices, is 4–6 KB per device (55 KB for 13 devices in the
	// captures): 16 MiB covers the largest real networks (about 3,000
	// devices; Zigbee2MQTT warns beyond a few hundred per coordinator).
	DefaultMaxPacketBytes = 16 << 20
	// DefaultMaxRetainedBytes bounds what the broker retains in total
	// (discovery configs are 1–3 KB each), each message counted as
	// retainedCost says.
	DefaultMaxRetainedBytes = 64 << 20

	// maxRetainedTopic bounds the topic of a retained message: real ones
	// are under a few hundred bytes, and a topic is stored several times
	// over (the message, mochi's topic tree, this account).
	maxRetainedTopic = 1 << 10
	// retainedOverhead is what a retained message costs beside its bytes
	// (mochi's packet and tree node, the maps' entries), so that a flood
	// of tiny messages is bounded too.
	retainedOverhead = 256
)

// retainedCost is what a retained message counts against the maximum:
// its payload, its topic twice and the overhead.
func retainedCost(topic string, payload int) int64 {
	return int64(payload + 2*len(topic) + retainedOverhead)
}

// WithMaxPacketBytes sets the largest MQTT packet the broker accepts
// (0: DefaultMaxPacketBytes). A client that sends a larger one is
// disconnected (reason 0x95, packet too large) before its payload is
// read; the broker announces the maximum to MQTT 5 clients in CONNACK.
func WithMaxPacketBytes(n int) BrokerOption {
	return func(c *brokerConfig) { c.maxPacket = n }
}

// WithMaxRetainedBytes sets how many bytes the broker retains in total
// (0: DefaultMaxRetainedBytes), each message counted as retainedCost
// says. A retained PUBLISH (or last will) that would go beyond, or whose
// topic is over maxRetainedTopic bytes, is still delivered to current
// subscribers but not retained, and the topic's earlier retained message
// stays.
func WithMaxRetainedBytes(n int) BrokerOption {
	return func(c *brokerConfig) { c.maxRetained = n }
}

// LimitCounts counts what the broker's size bounds refused, for /healthz.
type LimitCounts struct {
	OversizedPackets atomic.Uint64 // clients disconnected for a packet over the maximum
	RetainRefused    atomic.Uint64 // retained messages delivered but not retained
	RetainedBytes    atomic.Int64  // bytes retained now, as retainedCost counts them
}

// LimitCounts returns the counters of the broker's size bounds.
func (b *Broker) LimitCounts() *LimitCounts { return &b.limits.counts }

// limitsHook keeps the account of retained bytes (topic -> payload size)
// and refuses to retain beyond the maximum; it also counts and logs the
// clients mochi disconnects for a packet over the maximum size.
type limitsHook struct {
	mochi.HookBase
	max    int64
	log    *slog.Logger
	counts LimitCounts
	mu     sync.Mutex
	sizes  map[string]int64
	total  int64
}

func (h *limitsHook) ID() string { return "pilothouse-limits" }

func (h *limitsHook) Provides(b byte) bool {
	return bytes.Contains([]byte{mochi.OnPublish, mochi.OnWill, mochi.OnRetainedExpired, mochi.OnDisconnect}, []byte{b})
}

// OnPublish accounts a retained PUBLISH before mochi stores it (the ACL
// was checked before; no later hook refuses), or strips its retain flag.
func (h *limitsHook) OnPublish(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	if pk.FixedHeader.Retain && !h.retain(pk.TopicName, len(pk.Payload)) {
		pk.FixedHeader.Retain = false
		h.refused(cl, pk.TopicName, len(pk.Payload))
	}
	return pk, nil
}

// OnWill does the same for a retained last will, which mochi stores
// without OnPublish.
func (h *limitsHook) OnWill(cl *mochi.Client, will mochi.Will) (mochi.Will, error) {
	if will.Retain && !h.retain(will.TopicName, len(will.Payload)) {
		will.Retain = false
		h.refused(cl, will.TopicName, len(will.Payload))
	}
	return will, nil
}

func (h *limitsHook) OnRetainedExpired(topic string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.total -= h.sizes[topic]
	delete(h.sizes, topic)
	h.counts.RetainedBytes.Store(h.total)
}

func (h *limitsHook) OnDisconnect(cl *mochi.Client, err error, _ bool) {
	if errors.Is(err, packets.ErrPacketTooLarge) {
		h.counts.OversizedPackets.Add(1)
		h.log.Warn("mqtt client disconnected: packet over the maximum size (mqtt.max_message_bytes)",
			"client_id", cl.ID, "remote", cl.Net.Remote, "username", string(cl.Properties.Username))
	}
}

// retain reports whether a payload of n bytes may be retained on topic,
// and if so accounts it (an empty payload clears the topic's).
func (h *limitsHook) retain(topic string, n int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.sizes[topic]
	cost := retainedCost(topic, n)
	if n > 0 && (len(topic) > maxRetainedTopic || h.total-old+cost > h.max) {
		return false
	}
	if n == 0 {
		h.total -= old
		delete(h.sizes, topic)
	} else {
		h.total += cost - old
		h.sizes[topic] = cost
	}
	h.counts.RetainedBytes.Store(h.total)
	return true
}

func (h *limitsHook) refused(cl *mochi.Client, topic string, n int) {
	if k := h.counts.RetainRefused.Add(1); k&(k-1) == 0 { // logged the 1st, 2nd, 4th, 8th, … time
		h.log.Warn("mqtt message delivered but not retained: retained messages at their maximum (mqtt.embedded_max_retained_bytes)",
			"topic", topic, "bytes", n, "client_id", cl.ID, "max_retained_bytes", h.max, "refused", k)
	}
}
