package devices

import "github.com/pilothouse/pilothouse/devices/internal/model"

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
	lv.value, lv.changed, lv.first = v, tx.Now, prev == nil && lv.changed.IsZero()
	tx.c.live[id] = lv
	tx.changes = append(tx.changes, Change{Kind: ChangeState, ID: id, Value: v, Prev: prev, Time: tx.Now})
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
	tx.changes = append(tx.changes, Change{Kind: ChangeEvent, ID: id, Value: v, Time: tx.Now})
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
	tx.changes = append(tx.changes, Change{Kind: ChangeAvailability, ID: dev, Value: now, Prev: prev, Time: tx.Now})
}
