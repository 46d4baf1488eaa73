package model

import (
	"errors"
	"log/slog"
	"reflect"
	"sort"
	"sync/atomic"
	"time"

	"github.com/pilothouse/pilothouse/internal/bucket"
	"github.com/pilothouse/pilothouse/pilotage"
)

// What one message's routes compute: the routes a topic runs, the Rec
// they record their live changes in, whether a value is a change
// (EqualValues), and the template work a message may do (WorkBudget).

// Route handles one payload on a routed topic.
type Route func(tx *Rec, payload []byte)

type TopicRoute struct {
	Topic string
	Fn    Route
	// Entity says Fn reads the topic into one entity's states (a Home
	// Assistant entity's), whose commands are of risk Guards: a command
	// another action writes onto the topic can fake those states. Unset,
	// Fn reads into the whole device (its availability, a Zigbee2MQTT
	// device's topic, events), whose riskiest action counts.
	Entity bool
	Guards pilotage.RiskHints
}

// TopicRoutes are the routes of one topic. Nearly always one device has
// one route on a topic (dev, one: no allocation of its own); otherwise
// byDev holds them by device and list in device order, rebuilt after a
// change when the topic next carries a message.
type TopicRoutes struct {
	dev   string
	one   Route
	ByDev map[string][]Route
	List  []Route
}

// Add adds a device's route.
func (tr *TopicRoutes) Add(dev string, r Route) {
	switch {
	case tr.one == nil && tr.ByDev == nil:
		tr.dev, tr.one = dev, r
		return
	case tr.ByDev == nil:
		tr.ByDev = map[string][]Route{tr.dev: {tr.one}}
		tr.dev, tr.one = "", nil
	}
	tr.ByDev[dev] = append(tr.ByDev[dev], r)
	tr.List = nil
}

// Remove takes a device's routes out; it reports whether none are left.
func (tr *TopicRoutes) Remove(dev string) bool {
	if tr.ByDev == nil {
		if tr.dev == dev {
			tr.dev, tr.one = "", nil
		}
		return tr.one == nil
	}
	delete(tr.ByDev, dev)
	tr.List = nil
	return len(tr.ByDev) == 0
}

// Run runs the topic's routes on payload, in device order.
func (tr *TopicRoutes) Run(tx *Rec, payload []byte) {
	if tr.ByDev == nil {
		tr.one(tx, payload)
		return
	}
	if tr.List == nil {
		devs := make([]string, 0, len(tr.ByDev))
		for d := range tr.ByDev {
			devs = append(devs, d)
		}
		sort.Strings(devs)
		for _, d := range devs {
			tr.List = append(tr.List, tr.ByDev[d]...)
		}
	}
	for _, r := range tr.List {
		r(tx, payload)
	}
}

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
	textOf  *byte // the payload text is of (valueText)
	text    string
	// jLeft is the template work the message may still do (MsgJBudget,
	// or less when jRated: what the work budget per second grants);
	// jSkipped and jThrottled count the renderings it did not cover.
	JLeft      int
	JRated     bool
	JSkipped   int
	JThrottled int
	// Fanout is the number of subscribers a change is handed to (the
	// engine's scheduler, history, logbook, live watchers); each rendering
	// is charged the change it may make (routeCost).
	Fanout int
}

type opKind uint8

const (
	OpState  opKind = iota + 1 // a state value (and its key in the device object)
	OpEvent                    // an occurrence of an event
	OpTouch                    // the device was heard from
	OpProp                     // a key of the device object no entry routes
	OpAvail                    // one availability topic of a device
	OpUnread                   // a state's message could not be read (v: why)
	OpFresh                    // a state with expire_after was reported (D: its expire_after)
)

// Op is one live change a route computed.
type Op struct {
	Kind opKind
	Dev  string
	ID   string        // the state or event id; opAvail: the availability topic
	Key  string        // the key in the device object; opAvail: the mode
	V    any           // opAvail: the topic's availability (bool)
	D    time.Duration // opFresh: the state's expire_after
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

// Fresh records that state id, which Home Assistant's expire_after
// makes unavailable d after its last message, was just reported.
func (tx *Rec) Fresh(dev, id string, d time.Duration) {
	tx.Ops = append(tx.Ops, Op{Kind: OpFresh, Dev: dev, ID: id, D: d})
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
	Groups                     atomic.Uint64 // Zigbee2MQTT group lists refused (malformed, over their bounds)
	SkippedMsgs                uint64        // messages with skipped renderings (under the ingest lock)
	ThrottledMsgs              uint64        // messages with throttled renderings (under the ingest lock)
	LastFailure                atomic.Pointer[string]
}

// EqualValues reports whether two live values are equal.
func EqualValues(a, b any) bool {
	switch av := a.(type) {
	case nil:
		return b == nil
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case float64:
		bv, ok := b.(float64)
		return ok && av == bv
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv
	}
	return reflect.DeepEqual(a, b)
}

// Template work is bounded per second as well as per message: a topic
// whose every message used its whole budget (MsgJBudget) kept the reader,
// and so every other device's messages and the rules they fire, busy for
// as long as its burst lasted. Each message may do the least of MsgJBudget,
// what its topic's bucket holds (one hostile topic cannot starve the
// others) and what the bucket of all topics holds (many cannot take the
// CPU); what it did is taken from both, and the buckets refill with time.
// A house of 1,000 entities each rendering a 200-operation template every
// second does a tenth of the global rate, and a topic a few of its own.
const (
	WorkRate = 2_000_000 // operations per second, all topics together
	workCap  = 4 * MsgJBudget
	// workReserve is what topics at rest may take below an empty global
	// bucket (Grant); it refills at WorkRate like the rest.
	workReserve = MsgJBudget / 4
	// restSlack is what a topic at rest may have spent beyond what it
	// earned: a device's few messages in a row, not one message of a
	// topic that a thousand routes read.
	restSlack     = 1 << 14
	TopicWorkRate = 250_000 // operations per second, one topic
	// topicWorkCap lets a topic's message use the whole MsgJBudget twice
	// in a row (a retained state and its first update, say).
	topicWorkCap = 2 * MsgJBudget
	// maxWorkTopics bounds the topic buckets (topics are chosen by whoever
	// publishes); topics beyond it share one bucket until idle ones go.
	maxWorkTopics = 1024
)

// errRate: a bucket of workBudget is empty; the rendering is skipped.
var errRate = errors.New("template work over its rate: this topic's templates, or all topics' together, " +
	"used up the work they may do per second")

// WorkBudget holds the buckets; it belongs to the holder of c.ingest. A
// topic without a bucket has a full one (buckets are made when a topic
// spends and dropped when they are full again).
type WorkBudget struct {
	global   bucket.Bucket
	topics   map[string]*bucket.Bucket
	overflow bucket.Bucket // the topics beyond maxWorkTopics
	swept    time.Time     // the last sweep of the full buckets
}

func NewWorkBudget() *WorkBudget { return &WorkBudget{topics: map[string]*bucket.Bucket{}} }

// topic returns topic's bucket, or nil when it has none and may get one.
func (w *WorkBudget) topic(t string) *bucket.Bucket {
	if b := w.topics[t]; b != nil || len(w.topics) < maxWorkTopics {
		return b
	}
	return &w.overflow
}

// Grant returns the work a message on topic t may do at now. A topic at
// rest (its bucket within restSlack of full: it spent little lately) may
// also take workReserve below the empty global bucket: busy topics that
// together empty it then hold back one another, not every quiet device's
// next message.
func (w *WorkBudget) Grant(t string, now time.Time) int {
	g := w.global.Level(now, WorkRate, workCap)
	b := w.topic(t)
	if b == nil || b.Level(now, TopicWorkRate, topicWorkCap) >= topicWorkCap-restSlack {
		g += workReserve
	}
	g = min(g, float64(MsgJBudget))
	if b != nil {
		g = min(g, b.Tokens)
	}
	return max(int(g), 0)
}

// Spend takes the work a message on topic t did from both buckets. A
// message whose renderings were throttled takes at least restSlack from
// its topic's: a topic the global bucket holds back is busy, not at rest,
// however little it got to spend (else it took the quiet topics' reserve).
func (w *WorkBudget) Spend(t string, spent int, throttled bool, now time.Time) {
	if spent <= 0 && !throttled {
		return
	}
	w.global.Level(now, WorkRate, workCap)
	w.global.Tokens -= float64(max(spent, 0))
	if len(w.topics) >= maxWorkTopics && now.Sub(w.swept) >= time.Second {
		w.sweep(now)
	}
	b := w.topic(t)
	if b == nil {
		b = &bucket.Bucket{}
		w.topics[t] = b
	}
	b.Level(now, TopicWorkRate, topicWorkCap)
	if throttled {
		spent = max(spent, restSlack+1)
	}
	b.Tokens -= float64(spent)
}

// sweep drops the topic buckets that are full again (as good as none).
func (w *WorkBudget) sweep(now time.Time) {
	w.swept = now
	for t, b := range w.topics {
		if b.Level(now, TopicWorkRate, topicWorkCap) >= topicWorkCap {
			delete(w.topics, t)
		}
	}
}
