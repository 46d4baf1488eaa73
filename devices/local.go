package devices

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/pilotage"
)

// LocalDevice is a device Pilothouse itself owns (a household helper):
// its entries are built as a discovered device's are, its values change
// only through SetLocal and FireLocal, and its actions run Run instead of
// publishing. Its tags are source:pilothouse, type:<Type>, area:<Area>
// and Tags.
type LocalDevice struct {
	ID, Name, Description string
	Type, Area            string
	Tags                  []string
	States                []LocalState
	Events                []LocalEvent
	Actions               []LocalAction
}

// LocalState is one state entry of a LocalDevice; Key is its member in
// the device's object (the id's last segment).
type LocalState struct {
	ID, Key, Name, Description string
	Schema                     map[string]any
	// Class is what the state stands for, as a device_class names it: the
	// entry's own "class:<x>" tag, which selectors by tag read.
	Class string
}

// LocalEvent is one event entry of a LocalDevice.
type LocalEvent struct {
	ID, Name, Description string
	Values                []string
}

// LocalAction is one action entry of a LocalDevice: Input is its exact
// input schema, Check refuses what Input does not admit (Call, CheckArgs
// and Preview run it first) and Run carries the call out.
type LocalAction struct {
	ID, Name, Description string
	Risk                  pilotage.Risk
	Input                 map[string]any
	Check                 func(args map[string]any) error
	Run                   func(ctx context.Context, args map[string]any) error
}

// ErrIDTaken is returned by PutLocal for an id another device holds.
var ErrIDTaken = errors.New("devices: id taken")

func localSpec(d LocalDevice) *model.Spec {
	s := &model.Spec{ID: d.ID, Name: d.Name, Desc: d.Description, Source: "pilothouse", Typ: d.Type, Area: d.Area,
		Tags: d.Tags, Local: true}
	for _, st := range d.States {
		s.States = append(s.States, model.StateSpec{ID: st.ID, Name: st.Name, Desc: st.Description, Schema: st.Schema, Class: st.Class})
	}
	for _, ev := range d.Events {
		s.Events = append(s.Events, model.EventSpec{ID: ev.ID, Name: ev.Name, Desc: ev.Description, Values: ev.Values})
	}
	for _, la := range d.Actions {
		a := model.NewAction(la.ID, la.Name, la.Description, la.Risk)
		a.Schema, a.Check, a.MinProps = la.Input, la.Check, 0
		run := la.Run
		a.Send = own(func(ctx context.Context, p *sender, args map[string]any) error {
			if p.dry {
				return nil // a preview: a helper's action publishes nothing
			}
			return run(ctx, args)
		})
		s.Actions = append(s.Actions, a)
	}
	return s
}

// PutLocal adds or replaces a local device with its state values (state
// id → value). An id, or an entry id, that a discovered device holds is
// refused with ErrIDTaken.
func (c *Catalog) PutLocal(d LocalDevice, values map[string]any) error {
	s := localSpec(d)
	c.ingest.Lock()
	defer c.ingest.Unlock()
	old := c.model.specs[d.ID]
	if old != nil && !old.Local {
		return fmt.Errorf("%w: %q is a device", ErrIDTaken, d.ID)
	}
	if r, held := c.ids.ByID[d.ID]; held {
		return fmt.Errorf("%w: %q is a device's id (%s)", ErrIDTaken, d.ID, heldFor(r))
	}
	for _, id := range specIDs(d) {
		if owner := c.model.devOf[id]; owner != "" && owner != d.ID {
			return fmt.Errorf("%w: %q belongs to %s", ErrIDTaken, id, owner)
		}
	}
	c.local[d.ID] = s
	c.ids.Local[d.ID] = true
	keys := make(map[string]string, len(d.States))
	for _, st := range d.States {
		keys[st.ID] = st.Key
	}
	ids := make([]string, 0, len(values))
	for id := range values {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	tx := c.begin()
	tx.specs = []model.SpecChange{{Old: old, New: s}}
	c.mu.Lock()
	c.commitLocked(tx)
	for _, id := range ids {
		if _, ok := keys[id]; ok {
			tx.applyState(d.ID, id, keys[id], values[id])
		}
	}
	subs := c.finish(tx)
	c.mu.Unlock()
	c.fanOut(tx, subs)
	return nil
}

// heldFor says who holds a device id: a device now, or one that left
// and may come back for it.
func heldFor(r model.IDRow) string {
	if r.Left.IsZero() {
		return "held by " + r.Key.String()
	}
	return fmt.Sprintf("kept until %s for %s, which left at %s and may come back", r.Left.Add(model.IDReserve).UTC().Format(time.RFC3339),
		r.Key.String(), r.Left.UTC().Format(time.RFC3339))
}

func specIDs(d LocalDevice) []string {
	out := []string{d.ID}
	for _, st := range d.States {
		out = append(out, st.ID)
	}
	for _, ev := range d.Events {
		out = append(out, ev.ID)
	}
	for _, a := range d.Actions {
		out = append(out, a.ID)
	}
	return out
}

// RemoveLocal takes a local device and its entries out of the catalog.
func (c *Catalog) RemoveLocal(id string) {
	c.ingest.Lock()
	defer c.ingest.Unlock()
	old := c.local[id]
	if old == nil {
		return
	}
	delete(c.local, id)
	delete(c.ids.Local, id)
	tx := c.begin()
	tx.specs = []model.SpecChange{{Old: old}}
	subs := c.commitPhase(tx)
	c.fanOut(tx, subs)
}

// SetLocal sets the value of a local device's state: readers see it at
// once, subscribers are told in order on another goroutine, so SetLocal
// may be called by a subscriber (a rule fired by a change) without
// waiting for the ingestion it runs in. A state of no local device is
// ignored.
func (c *Catalog) SetLocal(id string, v any) {
	c.localOp(model.Op{Kind: model.OpState, ID: id, V: v})
}

// FireLocal records an occurrence of a local device's event, as SetLocal
// does a value.
func (c *Catalog) FireLocal(id string, v any) {
	c.localOp(model.Op{Kind: model.OpEvent, ID: id, V: v})
}

func (c *Catalog) localOp(o model.Op) {
	c.mu.Lock()
	defer c.mu.Unlock()
	dev := c.model.devOf[o.ID]
	if s := c.local[dev]; s == nil || dev == "" || c.model.specs[dev] != s {
		return
	}
	key := ""
	if i := len(dev); len(o.ID) > i+1 {
		key = o.ID[i+1:]
	}
	tx := &txn{c: c, Rec: model.Rec{Now: c.now()}}
	if o.Kind == model.OpState {
		tx.applyState(dev, o.ID, key, o.V)
	} else {
		tx.applyEvent(dev, o.ID, o.V)
	}
	c.localQ = append(c.localQ, tx.changes...)
	if len(c.localQ) > 0 && !c.localBusy {
		c.localBusy = true
		go c.drainLocal()
	}
}

// drainLocal tells the subscribers of the queued local changes, holding
// c.ingest as ingestion does, so they see them in order with the bus's.
func (c *Catalog) drainLocal() {
	for {
		c.ingest.Lock()
		c.mu.Lock()
		q, subs := c.localQ, c.subList
		c.localQ = nil
		if len(q) == 0 {
			c.localBusy = false
			c.mu.Unlock()
			c.ingest.Unlock()
			return
		}
		c.mu.Unlock()
		for _, ch := range q {
			for _, fn := range subs {
				fn(ch)
			}
		}
		c.ingest.Unlock()
	}
}
