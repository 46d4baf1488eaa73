package devices

// The routes of a topic run in the compute phase: what they find is
// recorded as ops, which the commit phase applies in order under c.mu. No
// route reads the live values, so applying later changes nothing.

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
func (tx *txn) setState(dev, id, prop string, v any) {
	tx.ops = append(tx.ops, op{kind: opState, dev: dev, id: id, key: prop, v: v})
}

// fireEvent records an occurrence; Live of an event id is its last value.
func (tx *txn) fireEvent(dev, id string, v any) {
	tx.ops = append(tx.ops, op{kind: opEvent, dev: dev, id: id, v: v})
}

// touch records that the device was heard from.
func (tx *txn) touch(dev string) { tx.ops = append(tx.ops, op{kind: opTouch, dev: dev}) }

// setProp records a key of the device object that no entry routes.
func (tx *txn) setProp(dev, key string, v any) {
	tx.ops = append(tx.ops, op{kind: opProp, dev: dev, key: key, v: v})
}

// setAvail records one availability topic of a device; the device's
// availability is recomputed under mode ("all", "any", or "latest").
func (tx *txn) setAvail(dev, topic string, ok bool, mode string) {
	tx.ops = append(tx.ops, op{kind: opAvail, dev: dev, id: topic, key: mode, v: ok})
}

// unread records that a message for state id could not be read; the
// state keeps its value and says why until a message reads again.
func (tx *txn) unread(id, why string) {
	tx.ops = append(tx.ops, op{kind: opUnread, id: id, v: why})
}

// apply applies one op (commit phase, c.mu held).
func (tx *txn) apply(o *op) {
	switch o.kind {
	case opState:
		tx.applyState(o.dev, o.id, o.key, o.v)
	case opEvent:
		tx.applyEvent(o.dev, o.id, o.v)
	case opTouch:
		tx.dev(o.dev).lastSeen = tx.now
	case opProp:
		d := tx.dev(o.dev)
		d.lastSeen = tx.now
		d.obj[o.key] = o.v
	case opAvail:
		tx.applyAvail(o.dev, o.id, o.v.(bool), o.key)
	case opUnread:
		tx.applyUnread(o.id, o.v.(string))
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
	lv.lastSeen, lv.unread = tx.now, ""
	d := tx.dev(dev)
	d.lastSeen = tx.now
	if prop != "" {
		d.obj[prop] = v
	}
	if lv.unsupported != "" || equalValues(lv.value, v) {
		tx.c.live[id] = lv
		return
	}
	prev := lv.value
	lv.value, lv.changed, lv.first = v, tx.now, prev == nil && lv.changed.IsZero()
	tx.c.live[id] = lv
	tx.changes = append(tx.changes, Change{Kind: ChangeState, ID: id, Value: v, Prev: prev, Time: tx.now})
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
	d.lastSeen = tx.now
	lv, ok := tx.c.live[id]
	if !ok {
		lv = liveVal{dev: dev}
	}
	lv.value, lv.lastSeen, lv.changed = v, tx.now, tx.now
	tx.c.live[id] = lv
	tx.changes = append(tx.changes, Change{Kind: ChangeEvent, ID: id, Value: v, Time: tx.now})
}

func (tx *txn) applyAvail(dev, topic string, ok bool, mode string) {
	d := tx.dev(dev)
	if d.avail == nil {
		d.avail = map[string]bool{}
	}
	d.avail[topic] = ok
	now := ok
	switch mode {
	case "all":
		now = true
		for _, v := range d.avail {
			now = now && v
		}
	case "any":
		now = false
		for _, v := range d.avail {
			now = now || v
		}
	}
	if d.availNow != nil && *d.availNow == now {
		return
	}
	var prev any
	if d.availNow != nil {
		prev = *d.availNow
	}
	d.availNow = &now
	tx.changes = append(tx.changes, Change{Kind: ChangeAvailability, ID: dev, Value: now, Prev: prev, Time: tx.now})
}
