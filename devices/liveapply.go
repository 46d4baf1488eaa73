package devices

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
