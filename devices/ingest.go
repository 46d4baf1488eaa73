package devices

import (
	"fmt"
	"strings"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/devices/internal/z2m"
	"github.com/pilothouse/pilothouse/mqtt"
)

// One message into the catalog, top to bottom: HandleMessage, its size
// check, the compute phase, the commit phase and fanOut to subscribers.
//
// Ingestion runs in two phases under c.ingest, which serialises messages
// (a topic's messages, and the changes they make, keep the bus's order).
// The compute phase decodes the payload, renders its templates and builds
// discovery's specs without c.mu: it reads only what ingestion alone
// writes (the sources, the id table, the pending payloads, the model,
// whose every writer holds c.ingest) and records its results in the txn.
// The commit phase holds c.mu only to apply them. Readers (Live, Call,
// CallAsync, Coverage, StateIDsForAction; Snapshot takes no lock) never
// take c.ingest, so a slow or failing template delays no reader.

// txn is one ingestion: the results its compute phase records and the
// changes its commit phase makes. It belongs to the holder of c.ingest.
type txn struct {
	model.Rec
	c       *Catalog
	changes []Change
	newSubs bool
	rebuilt bool   // discovery changed: device ids may have been assigned
	paced   bool   // from the bus: a rebuild takes a step (bridge.go)
	cont    bool   // bridgeLoop's next step of a paced rebuild
	topic   string // the message's, for its changes ("" for a local device)
	// retained: the message came with the retain flag (Change.Retained)
	retained bool
	z2mAvail *bool // bridge/info said whether availability is on
	// Computed, to be committed: the route lists a topic's first message
	// built, discovery's spec changes (the live changes are rec.ops).
	lists []topicList
	specs []model.SpecChange
	// replay holds the payloads that waited for routes the commit added.
	replay []topicPayload
}

type topicList struct {
	topic string
	tr    model.TopicRoutes
}

type topicPayload struct {
	topic    string
	payload  []byte
	retained bool
}

// ConfigsRead counts the discovery configs read since the start: Home
// Assistant's, and Zigbee2MQTT's device and group lists (a long start's
// progress).
func (c *Catalog) ConfigsRead() int64 { return c.configs.Load() }

// HandleMessage ingests one MQTT message: discovery, state, availability or
// event. It never panics on payload content; malformed payloads are logged
// with their topic and skipped, keeping the previous catalog. A device
// list is read at once (the subscriptions' handler, deliver, paces it).
func (c *Catalog) HandleMessage(m mqtt.Message) { c.handle(m, false) }

// deliver is the subscriptions' handler: a device list goes to
// bridgeLoop (bridge.go), the rest to HandleMessage's path, paced.
func (c *Catalog) deliver(m mqtt.Message) {
	if m.Topic == c.topics.devices && len(m.Payload) <= c.payloadBound(m.Topic) && c.queueBridge(m.Payload) {
		return
	}
	c.handle(m, true)
}

func (c *Catalog) handle(m mqtt.Message, paced bool) {
	if c.oversized(m.Topic, len(m.Payload)) {
		return
	}
	c.ingest.Lock()
	defer c.ingest.Unlock()
	tx := c.begin()
	tx.topic, tx.paced, tx.retained = m.Topic, paced, m.Retained
	granted := c.work.Grant(m.Topic, tx.Now)
	tx.JLeft, tx.JRated = granted, granted < model.MsgJBudget
	c.compute(tx, m)
	subs := c.commitPhase(tx)
	c.work.Spend(m.Topic, granted-tx.JLeft, tx.JThrottled > 0, tx.Now)
	if tx.JSkipped > 0 {
		c.logSkipped(m.Topic, tx.JSkipped)
	}
	if tx.JThrottled > 0 {
		c.logThrottled(m.Topic, tx.JThrottled)
	}
	c.fanOut(tx, subs)
}

// oversized reports (and logs, the 1st, 2nd, 4th, 8th, … time) a payload
// over its bound.
func (c *Catalog) oversized(t string, n int) bool {
	bound := c.payloadBound(t)
	if n <= bound {
		return false
	}
	if k := c.refused.Oversized.Add(1); k&(k-1) == 0 {
		c.log.Warn("mqtt message over its size bound not read; the catalog keeps what it had ("+boundName(bound, c.opts.MaxPayload)+")",
			"topic", t, "bytes", n, "max_bytes", bound, "refused", k)
	}
	return true
}

// boundName says which bound refused a message, so the owner raises the
// one that applied: the fixed bound of a device's own topics is not a
// setting.
func boundName(bound, maxPayload int) string {
	if bound < maxPayload {
		return fmt.Sprintf("a device's config and state messages are bounded at %d KiB, whatever mqtt.max_message_bytes says", maxEntityPayload>>10)
	}
	return "mqtt.max_message_bytes"
}

// payloadBound is the largest payload the catalog reads on topic t.
func (c *Catalog) payloadBound(t string) int {
	maxP := c.opts.MaxPayload
	if t == c.topics.devices || t == c.topics.groups || t == c.topics.event || t == c.topics.info {
		return maxP
	}
	return min(maxP, maxEntityPayload)
}

// begin starts an ingestion (c.ingest held): one txn and its buffers are
// reused; fanOut releases what it refers to.
func (c *Catalog) begin() *txn {
	tx := &c.tx
	*tx = txn{c: c, changes: tx.changes[:0], lists: tx.lists[:0],
		Rec: model.Rec{Now: c.now(), Log: c.log, Refused: &c.refused, Ops: tx.Ops[:0], JLeft: model.MsgJBudget,
			Fanout: int(c.fanout.Load())}}
	return tx
}

// compute is the compute phase of message m (c.ingest held, not c.mu).
func (c *Catalog) compute(tx *txn, m mqtt.Message) {
	t := m.Topic
	switch {
	case t == c.topics.devices:
		c.configs.Add(1)
		changed, refused, over := c.z2m.HandleDevices(c.log, m.Payload)
		if refused {
			c.refused.Oversized.Add(1)
		}
		if changed {
			c.overBound.Store(int64(over))
			tx.specs = c.rebuildSpecs(tx)
		}
		return
	case t == c.topics.groups:
		c.configs.Add(1)
		changed, refused := c.z2m.HandleGroups(c.log, m.Payload)
		if refused {
			c.refused.Groups.Add(1)
		}
		if changed {
			tx.specs = c.rebuildSpecs(tx)
		}
		return
	case t == c.topics.event:
		if c.z2m.HandleEvent(c.log, m.Payload) {
			tx.specs = c.rebuildSpecs(tx)
		}
		return
	case t == c.topics.info:
		if on, known := z2m.AvailabilityOn(m.Payload); known {
			tx.z2mAvail = &on
		}
		return
	case strings.HasPrefix(t, c.topics.haPrefix) && strings.HasSuffix(t, "/config"):
		c.configs.Add(1)
		if c.ha.HandleConfig(c.log, t, m.Payload) {
			tx.specs = c.ha.Rebuild(c.log, c.ids, c.z2mIDs)
		}
		return
	}
	if c.computeRoute(tx, t, m.Payload) {
		return
	}
	if c.z2mCommand(t) {
		return // a command to a device (ours, among others), never its state
	}
	c.keepPending(t, m.Payload, m.Retained)
}

// computeRoute runs the routes of topic t, and those of every routed
// filter that matches t (a state_topic with wildcards, as OpenMQTTGateway
// announces them: +/+/BTtoMQTT/<mac>), which record what they computed in
// tx; false when nothing routes t.
func (c *Catalog) computeRoute(tx *txn, t string, payload []byte) bool {
	hit := c.runRoutes(tx, t, payload)
	for f := range c.model.wild {
		if f != t && mqtt.TopicMatch(f, t) {
			hit = c.runRoutes(tx, f, payload) || hit
		}
	}
	return hit
}

// runRoutes runs the routes stored under topic (or filter) t.
func (c *Catalog) runRoutes(tx *txn, t string, payload []byte) bool {
	tr, ok := c.model.routes[t]
	if !ok {
		return false
	}
	if tr.ByDev != nil && tr.List == nil {
		tr.Run(&tx.Rec, payload)
		tx.lists = append(tx.lists, topicList{t, tr}) // keep the list it built
		return true
	}
	tr.Run(&tx.Rec, payload)
	return true
}

// commitPhase applies what tx computed, holding c.mu only for that, and
// returns the subscribers to notify. Payloads that waited for a route the
// commit added are then computed (without c.mu) and committed in turn.
func (c *Catalog) commitPhase(tx *txn) []func(Change) {
	for {
		c.mu.Lock()
		c.commitLocked(tx)
		subs := c.finish(tx)
		c.mu.Unlock()
		if len(tx.replay) == 0 {
			return subs
		}
		replay := tx.replay
		tx.replay, tx.retained = nil, true
		for _, r := range replay {
			c.computeRoute(tx, r.topic, r.payload)  // never adds routes: the loop ends
			tx.retained = tx.retained && r.retained // the batch is a copy if each payload was
		}
	}
}

// commitLocked applies the computed results in the order they were
// computed: route lists and live changes, then discovery's specs.
func (c *Catalog) commitLocked(tx *txn) {
	for _, l := range tx.lists {
		c.model.routes[l.topic] = l.tr
	}
	for i := range tx.Ops {
		tx.apply(&tx.Ops[i])
	}
	if len(tx.specs) > 0 {
		c.commitSpecs(tx, tx.specs) // discovery's; a state message has none
	}
	if tx.z2mAvail != nil {
		c.setZ2MAvail(*tx.z2mAvail)
	}
	clear(tx.Ops)
	clear(tx.lists)
	tx.Ops, tx.lists, tx.specs = tx.Ops[:0], tx.lists[:0], nil
}

// apply applies one op (commit phase, c.mu held).
func (tx *txn) apply(o *model.Op) {
	switch o.Kind {
	case model.OpState:
		tx.applyState(o.Dev, o.ID, o.Key, o.V)
	case model.OpEvent:
		tx.applyEvent(o.Dev, o.ID, o.V)
	case model.OpTouch:
		tx.dev(o.Dev).lastSeen = tx.Now
	case model.OpProp:
		d := tx.dev(o.Dev)
		d.lastSeen = tx.Now
		d.obj[o.Key] = o.V
	case model.OpAvail:
		tx.applyAvail(o.Dev, o.ID, o.V.(bool), o.Key)
	case model.OpUnread:
		tx.applyUnread(o.ID, o.V.(string))
	case model.OpFresh:
		tx.applyFresh(o.Dev, o.ID, o.D)
	}
}

func (tx *txn) dev(id string) *devLive {
	d := tx.c.devLive[id]
	if d == nil {
		d = &devLive{obj: map[string]any{}}
		tx.c.devLive[id] = d
	}
	return d
}

func (tx *txn) applyState(dev, id, prop string, v any) {
	lv, ok := tx.c.live[id]
	if !ok {
		lv = liveVal{dev: dev, unsupported: tx.c.model.unsupported[id]}
	}
	lv.lastSeen, lv.unread = tx.Now, ""
	d := tx.dev(dev)
	d.lastSeen = tx.Now
	if prop != "" {
		d.obj[prop] = v
	}
	if lv.unsupported != "" || model.EqualValues(lv.value, v) {
		tx.c.live[id] = lv
		return
	}
	prev := lv.value
	lv.value, lv.changed, lv.first, lv.retained = v, tx.Now, prev == nil && lv.changed.IsZero(), tx.retained
	tx.c.live[id] = lv
	tx.changes = append(tx.changes, Change{Kind: ChangeState, ID: id, Value: v, Prev: prev, Time: tx.Now,
		Offline: d.offline(), Topic: tx.topic, Retained: tx.retained})
}

// finish returns the subscribers to notify (nil when nothing changed).
func (c *Catalog) finish(tx *txn) []func(Change) {
	if len(tx.changes) == 0 || len(c.subs) == 0 {
		return nil
	}
	return c.subList
}

// fanOut tells subs of the ingestion's changes (c.mu released), applies
// what follows from them, and ends tx.
func (c *Catalog) fanOut(tx *txn, subs []func(Change)) {
	for _, ch := range tx.changes {
		for _, fn := range subs {
			fn(ch)
		}
	}
	if tx.newSubs {
		c.wakeSubscriber()
	}
	if tx.rebuilt {
		c.saveIDs()
	}
	tx.end()
}

// keptOps is the most ops whose buffer the next ingestion reuses (~230
// KB): a topic that many routes read records one or two ops per route on
// every message, and growing the buffer again each time cost it more than
// its routes (commitLocked clears what the ops refer to).
const keptOps = 4096

// end forgets the values of the finished ingestion and keeps small
// buffers for the next.
func (tx *txn) end() {
	tx.Forget()
	clear(tx.changes)
	if cap(tx.changes) > 64 {
		tx.changes = nil
	}
	if cap(tx.Ops) > keptOps {
		tx.Ops = nil
	}
	tx.changes, tx.Ops = tx.changes[:0], tx.Ops[:0]
}

// keepPending keeps the last payload of a topic nobody routes yet, so
// that a retained state that arrives before its discovery is not lost.
func (c *Catalog) keepPending(t string, payload []byte, retained bool) {
	if len(payload) > maxPendingPayload || len(t) > maxPendingTopic {
		return
	}
	if old := c.pending[t]; len(c.pending) < maxPending || old != nil {
		if len(payload) == 0 {
			old = nil // as append([]byte(nil)) of nothing
		}
		// The old payload was never handed out (replayTopics deletes
		// before it hands out), so its buffer is reused.
		c.pending[t] = append(old[:0], payload...)
		if retained {
			c.pendingCopy[t] = true
		} else {
			delete(c.pendingCopy, t)
		}
	}
}

// z2mCommand reports whether t is a Zigbee2MQTT command topic:
// <base>/<name>/set or /get, optionally followed by /<attribute>. The
// catalog's filters match none, but HandleMessage may be given one; none is
// state to keep for a device that is not discovered yet.
func (c *Catalog) z2mCommand(t string) bool {
	rest, ok := strings.CutPrefix(t, c.topics.z2mPrefix)
	if !ok {
		return false
	}
	return strings.HasSuffix(rest, "/set") || strings.HasSuffix(rest, "/get") ||
		strings.Contains(rest, "/set/") || strings.Contains(rest, "/get/")
}

func (tx *txn) applyUnread(id, why string) {
	lv, ok := tx.c.live[id]
	if !ok {
		dev := tx.c.model.devOf[id]
		if dev == "" {
			return // not an entry (a device's availability)
		}
		lv = liveVal{dev: dev, unsupported: tx.c.model.unsupported[id]}
	}
	lv.unread = why
	tx.c.live[id] = lv
}

func (tx *txn) applyEvent(dev, id string, v any) {
	d := tx.dev(dev)
	d.lastSeen = tx.Now
	lv, ok := tx.c.live[id]
	if !ok {
		lv = liveVal{dev: dev}
	}
	lv.value, lv.lastSeen, lv.changed = v, tx.Now, tx.Now
	tx.c.live[id] = lv
	tx.changes = append(tx.changes, Change{Kind: ChangeEvent, ID: id, Value: v, Time: tx.Now, Topic: tx.topic})
}
