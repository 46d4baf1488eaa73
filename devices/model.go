package devices

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Snapshot is one immutable view of the catalog entries.
type Snapshot struct {
	// Gen increments iff an entry was added, removed or changed in a
	// defined field. Live values never change it.
	Gen     uint64
	entries []*pilotage.Entry
	byID    map[string]*pilotage.Entry
}

// Entries returns the entries sorted by id. The slice and entries are shared
// and must be treated as read-only.
func (s *Snapshot) Entries() []*pilotage.Entry { return s.entries }

// Get returns the entry with this id.
func (s *Snapshot) Get(id string) (*pilotage.Entry, bool) {
	e, ok := s.byID[id]
	return e, ok
}

// Hash returns the content hash of the entry excluding its Revision, or ""
// for an unknown id. It is the entry's Revision.
func (s *Snapshot) Hash(id string) string {
	if e, ok := s.byID[id]; ok {
		return e.Revision
	}
	return ""
}

// Len is the number of entries.
func (s *Snapshot) Len() int { return len(s.entries) }

// route handles one payload on a routed topic.
type route func(tx *txn, payload []byte)

type topicRoute struct {
	topic string
	fn    route
}

// routeSet is the routes of one topic: nearly always one.
type routeSet struct {
	fn   route
	more []route
}

func (rs routeSet) run(tx *txn, payload []byte) {
	rs.fn(tx, payload)
	for _, r := range rs.more {
		r(tx, payload)
	}
}

// model is the routing and action table that goes with a snapshot.
type model struct {
	routes      map[string]routeSet
	actions     map[string]*action
	unsupported map[string]string
	devOf       map[string]string // entry id -> device id
	coverage    Coverage
}

// addRoutes adds the routes of one device.
func (m *model) addRoutes(rs []topicRoute) {
	for _, r := range rs {
		if set, ok := m.routes[r.topic]; ok {
			set.more = append(set.more, r.fn)
			m.routes[r.topic] = set
		} else {
			m.routes[r.topic] = routeSet{fn: r.fn}
		}
	}
}

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
}

// begin starts the transaction of one HandleMessage (or of NewCatalog):
// the ingest lock serialises them, so one txn and its change buffer are
// reused; end releases what it refers to.
func (c *Catalog) begin() *txn {
	tx := &c.tx
	*tx = txn{c: c, now: c.now(), changes: tx.changes[:0]}
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
	lv.value = v
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
	lv.value, lv.lastSeen = v, tx.now
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

// rebuildLocked recomputes entries, routes and actions from the sources,
// bumps Gen iff an entry changed and emits ChangeCatalog per changed id.
func (c *Catalog) rebuildLocked(tx *txn) {
	tx.rebuilt = true
	c.ids.begin()
	specs := c.z2m.build(c.log, c.ids)
	specs = append(specs, c.ha.build(c.log, c.ids, specs)...)
	c.ids.end(c.z2m.listed)
	specs = append(specs, notifySpecs(c.opts.Notify)...)

	m := &model{routes: map[string]routeSet{}, actions: map[string]*action{}, unsupported: map[string]string{}}
	byID := map[string]*pilotage.Entry{}
	devOf := map[string]string{}
	add := func(e *pilotage.Entry, dev string) bool {
		if _, dup := byID[e.ID]; dup && byID[e.ID] != e {
			c.log.Warn("duplicate catalog id skipped", "id", e.ID, "device", dev)
			return false
		}
		byID[e.ID] = e
		devOf[e.ID] = dev
		return true
	}
	for _, s := range specs {
		ents := s.buildEntries(c.intern)
		if !s.noDevice && !add(&ents[0], s.id) {
			continue
		}
		m.coverage.count(s)
		for i := range ents {
			if ents[i].Kind != pilotage.KindDevice {
				add(&ents[i], s.id)
			}
		}
		for _, st := range s.states {
			if st.unsupported != "" {
				m.unsupported[st.id] = st.unsupported
			}
		}
		for _, a := range s.actions {
			if byID[a.id] != nil && devOf[a.id] == s.id {
				m.actions[a.id] = a
			}
		}
		m.addRoutes(s.routes)
	}
	m.devOf = devOf
	c.model = m
	for _, id := range c.commitEntries(tx, byID) {
		delete(c.live, id) // its meaning changed: unknown until the next message
	}
	c.pruneLive(byID)
	c.intern.trim()
	c.subscribeRoutes(tx)
	c.replayPending(tx)
}

// commitEntries stores a new snapshot when entries changed and returns the
// ids of modified entries.
func (c *Catalog) commitEntries(tx *txn, byID map[string]*pilotage.Entry) []string {
	old := c.snap.Load()
	entries := make([]*pilotage.Entry, 0, len(byID))
	var changes []Change
	var modified []string
	for id, e := range byID {
		entries = append(entries, e)
		if oe, ok := old.byID[id]; !ok {
			changes = append(changes, Change{Kind: ChangeCatalog, ID: id, Value: "added", Time: tx.now})
		} else if oe.Revision != e.Revision {
			changes = append(changes, Change{Kind: ChangeCatalog, ID: id, Value: "modified", Time: tx.now})
			modified = append(modified, id)
		}
	}
	for id := range old.byID {
		if _, ok := byID[id]; !ok {
			changes = append(changes, Change{Kind: ChangeCatalog, ID: id, Value: "removed", Time: tx.now})
		}
	}
	if len(changes) == 0 {
		return nil
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].ID < entries[j].ID })
	sort.Slice(changes, func(i, j int) bool { return changes[i].ID < changes[j].ID })
	c.snap.Store(&Snapshot{Gen: old.Gen + 1, entries: entries, byID: byID})
	tx.changes = append(tx.changes, changes...)
	return modified
}

// pruneLive forgets live values of entries and devices that are gone, and
// refreshes the unsupported marks.
func (c *Catalog) pruneLive(byID map[string]*pilotage.Entry) {
	for id, lv := range c.live {
		if _, ok := byID[id]; !ok {
			delete(c.live, id)
			continue
		}
		lv.unsupported = c.model.unsupported[id]
		if lv.unsupported != "" {
			lv.value = nil
		}
		c.live[id] = lv
	}
	for id := range c.devLive {
		if _, ok := byID[id]; !ok {
			delete(c.devLive, id)
		}
	}
}

// subscribeRoutes queues the routed topics outside the two wildcard
// subscriptions for the subscriber goroutine.
func (c *Catalog) subscribeRoutes(tx *txn) {
	base, prefix := c.opts.Z2MBase+"/", c.opts.HAPrefix+"/"
	for t := range c.model.routes {
		if strings.HasPrefix(t, base) || strings.HasPrefix(t, prefix) || c.subbed[t] {
			continue
		}
		c.subbed[t] = true
		c.subQ = append(c.subQ, t)
		tx.newSubs = true
	}
	sort.Strings(c.subQ)
}

// replayPending feeds payloads that arrived before their route existed.
func (c *Catalog) replayPending(tx *txn) {
	if len(c.pending) == 0 {
		return
	}
	topics := make([]string, 0)
	for t := range c.pending {
		if _, ok := c.model.routes[t]; ok {
			topics = append(topics, t)
		}
	}
	sort.Strings(topics)
	for _, t := range topics {
		p := c.pending[t]
		delete(c.pending, t)
		c.model.routes[t].run(tx, p)
	}
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
