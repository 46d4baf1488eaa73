package model

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// The routes of a topic run in the compute phase: what they find is
// recorded as ops, which the commit phase applies in order under c.mu. No
// route reads the live values, so applying later changes nothing.

// Rec is what the compute phase of one ingestion records: the routes'
// live changes (ops) in order, the payload decoded for value_json, shared
// by the routes of one topic (renderMsg), and the template work the
// message may still do.
type Rec struct {
	Now     time.Time
	Log     *slog.Logger
	Refused *RefusalCounts
	Ops     []Op
	JSONOf  *byte
	jsonLen int
	JSONVal any
	// jLeft is the template work the message may still do (MsgJBudget,
	// or less when jRated: what the work budget per second grants);
	// jSkipped and jThrottled count the renderings it did not cover.
	JLeft      int
	JRated     bool
	JSkipped   int
	JThrottled int
}

type opKind uint8

const (
	OpState  opKind = iota + 1 // a state value (and its key in the device object)
	OpEvent                    // an occurrence of an event
	OpTouch                    // the device was heard from
	OpProp                     // a key of the device object no entry routes
	OpAvail                    // one availability topic of a device
	OpUnread                   // a state's message could not be read (v: why)
)

// Op is one live change a route computed.
type Op struct {
	Kind opKind
	Dev  string
	ID   string // the state or event id; opAvail: the availability topic
	Key  string // the key in the device object; opAvail: the mode
	V    any    // opAvail: the topic's availability (bool)
}

// SetState records a state value; prop is the key in the device object.
func (tx *Rec) SetState(dev, id, prop string, v any) {
	tx.Ops = append(tx.Ops, Op{Kind: OpState, Dev: dev, ID: id, Key: prop, V: v})
}

// FireEvent records an occurrence; Live of an event id is its last value.
func (tx *Rec) FireEvent(dev, id string, v any) {
	tx.Ops = append(tx.Ops, Op{Kind: OpEvent, Dev: dev, ID: id, V: v})
}

// Touch records that the device was heard from.
func (tx *Rec) Touch(dev string) { tx.Ops = append(tx.Ops, Op{Kind: OpTouch, Dev: dev}) }

// SetProp records a key of the device object that no entry routes.
func (tx *Rec) SetProp(dev, key string, v any) {
	tx.Ops = append(tx.Ops, Op{Kind: OpProp, Dev: dev, Key: key, V: v})
}

// SetAvail records one availability topic of a device; the device's
// availability is recomputed under mode ("all", "any", or "latest").
func (tx *Rec) SetAvail(dev, topic string, ok bool, mode string) {
	tx.Ops = append(tx.Ops, Op{Kind: OpAvail, Dev: dev, ID: topic, Key: mode, V: ok})
}

// unread records that a message for state id could not be read; the
// state keeps its value and says why until a message reads again.
func (tx *Rec) unread(id, why string) {
	tx.Ops = append(tx.Ops, Op{Kind: OpUnread, ID: id, V: why})
}

// RefusalCounts counts what ingestion refused to read (Refusals).
type RefusalCounts struct {
	Oversized, Skipped, Failed atomic.Uint64
	Throttled                  atomic.Uint64
	SkippedMsgs                uint64 // messages with skipped renderings (under the ingest lock)
	ThrottledMsgs              uint64 // messages with throttled renderings (under the ingest lock)
	LastFailure                atomic.Pointer[string]
}
