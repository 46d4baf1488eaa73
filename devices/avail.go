package devices

import (
	"container/heap"
	"strconv"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// A device's availability, as Home Assistant reads it. Its availability
// topics say online or offline (under the mode: the latest, all or any);
// a device whose discovery names availability topics reads offline until
// one reports (Home Assistant shows it unavailable until then; a retained
// report read at the start counts). A state with expire_after reads its
// device offline until its first message and again expire_after after
// its last one (until the next): one timer for the whole catalog
// (expiries), a message costing a map write.

// offline reports whether reads see the device as offline.
func (d *devLive) offline() bool {
	if len(d.expired) > 0 {
		return true
	}
	if d.availNow != nil {
		return !*d.availNow
	}
	return len(d.declared) > 0
}

// available is the device's availability as reads see it: nil when
// nothing said (read as available).
func (d *devLive) available() *bool {
	if d.availNow == nil && !d.offline() {
		return nil
	}
	v := !d.offline()
	return &v
}

// declareAvail records what a device's spec says of its availability
// (commit phase, c.mu held): its availability topics, and its states
// with expire_after, which read offline until their first message.
func (c *Catalog) declareAvail(s *model.Spec) {
	d := c.devLive[s.ID]
	if d == nil {
		if len(s.Avail) == 0 && len(s.Expire) == 0 && (!c.z2mAvail || s.Z2MAvail == "") {
			return
		}
		d = &devLive{obj: map[string]any{}}
		c.devLive[s.ID] = d
	}
	d.declared = s.Avail
	if c.z2mAvail && s.Z2MAvail != "" && s.Group == nil {
		d.declared = []string{s.Z2MAvail}
	}
	old := d.expired
	d.expired, d.expires = nil, s.Expire
	for _, id := range s.Expire {
		why, had := old[id]
		if !had && c.exp.due[expKey{s.ID, id}].at.IsZero() {
			why, had = "no report yet: expire_after", true
		}
		if had {
			if d.expired == nil {
				d.expired = map[string]string{}
			}
			d.expired[id] = why
		}
	}
}

// setZ2MAvail applies bridge/info's availability setting to every
// Zigbee2MQTT device (commit phase, c.mu held): on, a device reads
// offline until its availability topic reports, as Home Assistant's
// Zigbee2MQTT discovery then names that topic.
func (c *Catalog) setZ2MAvail(on bool) {
	if c.z2mAvail == on {
		return
	}
	c.z2mAvail = on
	for _, s := range c.model.specs {
		if s.Z2MAvail != "" && !s.NoDevice {
			c.declareAvail(s)
		}
	}
}

func (tx *txn) applyAvail(dev, topic string, ok bool, mode string) {
	d := tx.dev(dev)
	if d.avail == nil {
		d.avail = map[string]bool{}
	}
	d.avail[topic] = ok
	d.latest = ok
	d.mode = mode
	tx.announce(dev, d, nil)
}

// topics is what the availability topics say: known is false while
// none reported.
func (d *devLive) topics() (ok, known bool) {
	if len(d.avail) == 0 {
		return false, false
	}
	switch d.mode {
	case "all":
		ok = true
		for _, v := range d.avail {
			ok = ok && v
		}
		for _, t := range d.declared {
			ok = ok && d.avail[t] // one not reported yet is not online
		}
	case "any":
		for _, v := range d.avail {
			ok = ok || v
		}
	default:
		ok = d.latest
	}
	return ok, true
}

// announce recomputes the device's availability and records its change.
// implied is its previous value when none was announced (nil: none, the
// first report after a start, a baseline).
func (tx *txn) announce(dev string, d *devLive, implied any) {
	now, known := d.topics()
	switch {
	case len(d.expired) > 0:
		now, known = false, true
	case !known && len(d.declared) == 0:
		// Only expire_after speaks: back online once it had said offline.
		now, known = true, d.availNow != nil
	}
	if !known || (d.availNow != nil && *d.availNow == now) {
		return
	}
	prev := implied
	if d.availNow != nil {
		prev = *d.availNow
	}
	d.availNow = &now
	tx.changes = append(tx.changes, Change{Kind: ChangeAvailability, ID: dev, Value: now, Prev: prev, Time: tx.Now,
		Topic: tx.topic, Why: d.why()})
}

// why is the reason an expired state gives for its device's being
// offline ("" when none has).
func (d *devLive) why() string {
	for _, w := range d.expired {
		return w
	}
	return ""
}

// applyFresh records a message of state id, which has expire_after d:
// its deadline moves, and a state that had expired is fresh again.
func (tx *txn) applyFresh(dev, id string, d time.Duration) {
	c := tx.c
	dl := tx.dev(dev)
	k := expKey{dev, id}
	at := tx.Now.Add(d)
	if old, armed := c.exp.due[k]; !armed || at.Before(old.at) {
		heap.Push(&c.exp.q, expItem{at, k})
		c.arm(at)
	}
	c.exp.due[k] = expDue{at, d}
	if _, was := dl.expired[id]; was {
		delete(dl.expired, id)
		tx.announce(dev, dl, nil)
	}
}

// expiries is the catalog's expire_after deadlines (under c.mu): due has
// each state's latest, q one item per state (more only when a deadline
// moved earlier), popped at its time and pushed again when due moved
// later meanwhile; a message writes due alone.
type expiries struct {
	due   map[expKey]expDue
	q     expQueue
	timer *time.Timer
	armed time.Time // when timer fires (zero: stopped)
}

type expKey struct{ dev, id string }

type expDue struct {
	at time.Time
	d  time.Duration
}

type expItem struct {
	at time.Time
	k  expKey
}

type expQueue []expItem

func (q expQueue) Len() int           { return len(q) }
func (q expQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q expQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *expQueue) Push(x any)        { *q = append(*q, x.(expItem)) }
func (q *expQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

// arm makes the timer fire by at (c.mu held).
func (c *Catalog) arm(at time.Time) {
	if !c.exp.armed.IsZero() && !at.Before(c.exp.armed) {
		return
	}
	c.exp.armed = at
	wait := at.Sub(c.now())
	if c.exp.timer == nil {
		c.exp.timer = time.AfterFunc(wait, c.expireDue)
		return
	}
	c.exp.timer.Reset(wait)
}

// expireDue marks offline the devices whose states' expire_after ran
// out, as an ingestion of its own (the changes keep the bus's order).
func (c *Catalog) expireDue() {
	c.ingest.Lock()
	defer c.ingest.Unlock()
	tx := c.begin()
	c.mu.Lock()
	c.exp.armed = time.Time{}
	for len(c.exp.q) > 0 && !c.exp.q[0].at.After(tx.Now) {
		it := heap.Pop(&c.exp.q).(expItem)
		due, ok := c.exp.due[it.k]
		if !ok || due.at.Before(it.at) {
			continue // an earlier item for it expired it, or it is gone
		}
		if due.at.After(it.at) {
			heap.Push(&c.exp.q, expItem{due.at, it.k})
			continue
		}
		delete(c.exp.due, it.k)
		c.expire(tx, it.k, due.d)
	}
	if len(c.exp.q) > 0 {
		c.arm(c.exp.q[0].at)
	}
	subs := c.finish(tx)
	c.mu.Unlock()
	c.fanOut(tx, subs)
}

// expire marks a state's device offline: no report for d.
func (c *Catalog) expire(tx *txn, k expKey, d time.Duration) {
	dl := c.devLive[k.dev]
	if dl == nil || !dl.declaresExpire(k.id) {
		return // the device, or its expire_after, is gone
	}
	if dl.expired == nil {
		dl.expired = map[string]string{}
	}
	why := "no report for " + strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s: expire_after"
	dl.expired[k.id] = why
	c.log.Info("device offline: a state's expire_after ran out", "device", k.dev, "id", k.id, "why", why)
	// It was online as far as reads went (its state had just reported):
	// going offline is a change, not a first report.
	tx.announce(k.dev, dl, true)
}

func (d *devLive) declaresExpire(id string) bool {
	for _, e := range d.expires {
		if e == id {
			return true
		}
	}
	return false
}
