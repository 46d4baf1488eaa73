package devices

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
)

// devSpec is the source-neutral description of one device, from which its
// entries, routes and actions are derived.
type devSpec struct {
	id, name, desc string
	source, typ    string
	manufacturer   string
	modelName      string
	area           string
	tags           []string
	deviceTag      string // "device:<id>" when built ahead
	noDevice       bool   // notification channels: actions only
	states         []stateSpec
	events         []eventSpec
	actions        []*action
	routes         []topicRoute
	entries        []pilotage.Entry // built once per spec, revision set
	built          bool
	fidelity       fidelity // how fully the source's description is modelled
}

// fidelity says how fully a device is modelled; a partial or unmodelled
// device's entry says why (tag and description).
type fidelity uint8

const (
	fidelityFull fidelity = iota
	fidelityPartial
	fidelityNone
)

// buildEntries derives the spec's entries once; specs are cached by their
// sources while their input is unchanged, so rebuilds stay cheap. The
// entries of a spec live in one slab, share their tag list and one string of
// revisions; equal schemas, names and descriptions are shared through in.
func (s *devSpec) buildEntries(in *interner) []pilotage.Entry {
	if s.built {
		return s.entries
	}
	n := len(s.states) + len(s.events) + len(s.actions)
	if !s.noDevice {
		n++
	}
	out := make([]pilotage.Entry, 0, n)
	if !s.noDevice {
		out = append(out, deviceEntry(s, in))
	}
	var tags []string
	if s.noDevice {
		tags = in.tagList([]string{"notify"})
	} else {
		tags = childTags(s, in)
	}
	for _, st := range s.states {
		out = append(out, stateEntry(s, st, tags, in))
	}
	for _, ev := range s.events {
		out = append(out, eventEntry(ev, tags, in))
	}
	for _, a := range s.actions {
		out = append(out, actionEntry(a, tags, in))
	}
	revs := make([]byte, 0, 24*len(out))
	ends := make([]int, len(out))
	for i := range out {
		revs = append(revs, out[i].ContentHash()...)
		ends[i] = len(revs)
	}
	all, off := string(revs), 0
	for i := range out {
		out[i].Revision = all[off:ends[i]]
		off = ends[i]
	}
	s.entries, s.built = out, true
	s.dropBuildState(in)
	return out
}

// dropBuildState forgets what only buildEntries reads: schemas, texts and
// event values. Of the states, rebuildLocked still reads the unsupported.
func (s *devSpec) dropBuildState(in *interner) {
	var keep []stateSpec
	for _, st := range s.states {
		if st.unsupported != "" {
			keep = append(keep, stateSpec{id: st.id, unsupported: st.unsupported})
		}
	}
	s.states, s.events = keep, nil
	s.name, s.desc, s.typ, s.manufacturer, s.modelName, s.area, s.tags, s.deviceTag = "", "", "", "", "", "", nil, ""
	for _, a := range s.actions {
		dropSchemas(a.fields)
		a.fields = in.fieldMap(a.fields)
	}
}

type stateSpec struct {
	id, name, desc string
	schema         map[string]any
	unsupported    string
	// class is what the state measures or detects, as Home Assistant's
	// device_class names it (occupancy, door, temperature): the entry's
	// "class:<x>" tag, which a catalog param can require.
	class string
}

type eventSpec struct {
	id, name, desc string
	values         []string
}

// txn collects the changes of one HandleMessage call.
type txn struct {
	c       *Catalog
	now     time.Time
	changes []Change
	newSubs bool
	rebuilt bool // discovery changed: device ids may have been assigned
	// The payload decoded for value_json, shared by the routes of one
	// topic (renderMsg).
	jsonOf  *byte
	jsonLen int
	jsonVal any
	// jLeft is the template work the message may still do (msgJBudget);
	// jSkipped counts the renderings it did not cover.
	jLeft    int
	jSkipped int
}

// begin starts the transaction of one HandleMessage (or of NewCatalog):
// the ingest lock serialises them, so one txn and its change buffer are
// reused; end releases what it refers to.
func (c *Catalog) begin() *txn {
	tx := &c.tx
	*tx = txn{c: c, now: c.now(), changes: tx.changes[:0], jLeft: msgJBudget}
	return tx
}

// end forgets the values of the finished transaction and keeps a small
// change buffer for the next.
func (tx *txn) end() {
	tx.jsonOf, tx.jsonVal = nil, nil
	clear(tx.changes)
	if cap(tx.changes) > 64 {
		tx.changes = nil
	}
	tx.changes = tx.changes[:0]
}

// finish returns the subscribers to notify (nil when nothing changed).
func (c *Catalog) finish(tx *txn) []func(Change) {
	if len(tx.changes) == 0 || len(c.subs) == 0 {
		return nil
	}
	return c.subList
}

// listSubs recomputes subList, the subscribers in subscription order. It
// is replaced, never changed in place, so a finished transaction may use
// it after the lock is released.
func (c *Catalog) listSubs() {
	ids := make([]int, 0, len(c.subs))
	for id := range c.subs {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	out := make([]func(Change), len(ids))
	for i, id := range ids {
		out[i] = c.subs[id]
	}
	c.subList = out
}

func (tx *txn) dev(id string) *devLive {
	d := tx.c.devLive[id]
	if d == nil {
		d = &devLive{obj: map[string]any{}}
		tx.c.devLive[id] = d
	}
	return d
}

// setState records a state value; prop is the key in the device object.
func (tx *txn) setState(dev, id, prop string, v any) {
	lv, ok := tx.c.live[id]
	if !ok {
		lv = liveVal{dev: dev, unsupported: tx.c.model.unsupported[id]}
	}
	lv.lastSeen = tx.now
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

// fireEvent records an occurrence; Live of an event id is its last value.
func (tx *txn) fireEvent(dev, id string, v any) {
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

func (tx *txn) touch(dev string) { tx.dev(dev).lastSeen = tx.now }

// setAvail records one availability topic of a device and recomputes the
// device's availability under mode ("all", "any", or "latest").
func (tx *txn) setAvail(dev, topic string, ok bool, mode string) {
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

func equalValues(a, b any) bool {
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

func readHints() pilotage.RiskHints { return pilotage.HintsOf(pilotage.RiskRead) }

func deviceEntry(s *devSpec, in *interner) pilotage.Entry {
	tags := []string{in.concat("source:", s.source)}
	if s.typ != "" {
		tags = append(tags, in.concat("type:", s.typ))
	}
	if s.manufacturer != "" {
		tags = append(tags, in.concat("manufacturer:", s.manufacturer))
	}
	if s.modelName != "" {
		tags = append(tags, in.concat("model:", s.modelName))
	}
	if s.area != "" {
		tags = append(tags, in.concat("area:", s.area))
	}
	for _, t := range s.tags {
		tags = append(tags, in.str(t))
	}
	return pilotage.Entry{ID: s.id, Kind: pilotage.KindDevice, Name: s.name, Description: in.str(s.desc),
		Tags: in.tagList(tags), Risk: pilotage.RiskRead, RiskHints: readHints()}
}

// childTags is the tag list shared by the states, events and actions of a
// device.
func childTags(s *devSpec, in *interner) []string {
	dt := s.deviceTag
	if dt == "" {
		dt = "device:" + s.id
	}
	tags := make([]string, 0, 3)
	tags = append(tags, dt, in.concat("source:", s.source))
	if s.area != "" {
		tags = append(tags, in.concat("area:", s.area))
	}
	return tags[:len(tags):len(tags)]
}

func stateEntry(s *devSpec, st stateSpec, tags []string, in *interner) pilotage.Entry {
	desc := st.desc
	if st.class != "" {
		tags = append(tags[:len(tags):len(tags)], in.concat("class:", st.class))
	}
	if st.unsupported != "" {
		tags = append(tags[:len(tags):len(tags)], "unsupported")
		desc = strings.TrimSpace(desc + " Live value unsupported: " + st.unsupported + ".")
	}
	return pilotage.Entry{ID: st.id, Kind: pilotage.KindState, Name: in.str(st.name), Description: in.str(desc),
		Tags: tags, OutputSchema: in.raw(mustJSON(st.schema)), Risk: pilotage.RiskRead, RiskHints: readHints()}
}

func eventEntry(ev eventSpec, tags []string, in *interner) pilotage.Entry {
	schema := map[string]any{"type": "string"}
	if len(ev.values) > 0 {
		schema["enum"] = ev.values
	}
	return pilotage.Entry{ID: ev.id, Kind: pilotage.KindEvent, Name: in.str(ev.name), Description: in.str(ev.desc),
		Tags: tags, OutputSchema: in.raw(mustJSON(schema)), Risk: pilotage.RiskRead, RiskHints: readHints()}
}

func actionEntry(a *action, tags []string, in *interner) pilotage.Entry {
	return pilotage.Entry{ID: a.id, Kind: pilotage.KindAction, Name: a.name, Description: a.desc,
		Tags: tags, Callable: true, InputSchema: in.raw(mustJSON(a.inputSchema())), Risk: a.risk, RiskHints: pilotage.HintsOf(a.risk)}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// slug turns a friendly name into an id segment: lowercase ASCII letters,
// digits and '_' (everything else becomes '_', runs collapse, ends trimmed).
func slug(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			under = false
			continue
		}
		if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}
