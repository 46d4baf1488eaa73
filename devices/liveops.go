package devices

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// The routes of a topic run in the compute phase: what they find is
// recorded as ops, which the commit phase applies in order under c.mu. No
// route reads the live values, so applying later changes nothing.

// rec is what the compute phase of one ingestion records: the routes'
// live changes (ops) in order, the payload decoded for value_json, shared
// by the routes of one topic (renderMsg), and the template work the
// message may still do.
type rec struct {
	now     time.Time
	log     *slog.Logger
	refused *refusalCounts
	ops     []op
	jsonOf  *byte
	jsonLen int
	jsonVal any
	// jLeft is the template work the message may still do (msgJBudget,
	// or less when jRated: what the work budget per second grants);
	// jSkipped and jThrottled count the renderings it did not cover.
	jLeft      int
	jRated     bool
	jSkipped   int
	jThrottled int
}

type opKind uint8

const (
	opState  opKind = iota + 1 // a state value (and its key in the device object)
	opEvent                    // an occurrence of an event
	opTouch                    // the device was heard from
	opProp                     // a key of the device object no entry routes
	opAvail                    // one availability topic of a device
	opUnread                   // a state's message could not be read (v: why)
)

// op is one live change a route computed.
type op struct {
	kind opKind
	dev  string
	id   string // the state or event id; opAvail: the availability topic
	key  string // the key in the device object; opAvail: the mode
	v    any    // opAvail: the topic's availability (bool)
}

// setState records a state value; prop is the key in the device object.
func (tx *rec) setState(dev, id, prop string, v any) {
	tx.ops = append(tx.ops, op{kind: opState, dev: dev, id: id, key: prop, v: v})
}

// fireEvent records an occurrence; Live of an event id is its last value.
func (tx *rec) fireEvent(dev, id string, v any) {
	tx.ops = append(tx.ops, op{kind: opEvent, dev: dev, id: id, v: v})
}

// touch records that the device was heard from.
func (tx *rec) touch(dev string) { tx.ops = append(tx.ops, op{kind: opTouch, dev: dev}) }

// setProp records a key of the device object that no entry routes.
func (tx *rec) setProp(dev, key string, v any) {
	tx.ops = append(tx.ops, op{kind: opProp, dev: dev, key: key, v: v})
}

// setAvail records one availability topic of a device; the device's
// availability is recomputed under mode ("all", "any", or "latest").
func (tx *rec) setAvail(dev, topic string, ok bool, mode string) {
	tx.ops = append(tx.ops, op{kind: opAvail, dev: dev, id: topic, key: mode, v: ok})
}

// unread records that a message for state id could not be read; the
// state keeps its value and says why until a message reads again.
func (tx *rec) unread(id, why string) {
	tx.ops = append(tx.ops, op{kind: opUnread, id: id, v: why})
}

// refusalCounts counts what ingestion refused to read (Refusals).
type refusalCounts struct {
	oversized, skipped, failed atomic.Uint64
	throttled                  atomic.Uint64
	skippedMsgs                uint64 // messages with skipped renderings (under the ingest lock)
	throttledMsgs              uint64 // messages with throttled renderings (under the ingest lock)
	lastFailure                atomic.Pointer[string]
}
