package devices

import (
	"sort"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/pilotage"
)

// Discovery is incremental: a message changes the specs of the devices it
// concerns, and commit applies exactly those (their entries, routes,
// actions, live values, subscriptions), so its cost does not grow with
// the catalog. Only a Zigbee2MQTT device list, which names every device,
// compares every spec (by pointer: unchanged devices keep theirs).

// routeTable is the routing and action table that goes with the snapshot,
// changed in place by the commit phase (see ingest.go).
type routeTable struct {
	routes      map[string]model.TopicRoutes // read by the compute phase, changed and stored back by the commit
	wild        map[string]bool              // the routed topics that are filters (+, #): a message matching one runs its routes
	actions     map[string]*action
	unsupported map[string]string
	devOf       map[string]string      // entry id -> device id
	specs       map[string]*model.Spec // device id (notifySpecID) -> its spec in the snapshot
	coverage    Coverage
	shares      topicShares // the command topics actions write (topicshare.go)
}

// notifySpecID keys the notification channels' spec (no device).
const notifySpecID = "\x00notify"

func newRouteTable(z2mBase, haPrefix string) *routeTable {
	devOf := map[string]string{}
	return &routeTable{routes: map[string]model.TopicRoutes{}, wild: map[string]bool{}, actions: map[string]*action{}, unsupported: map[string]string{},
		devOf: devOf, specs: map[string]*model.Spec{}, shares: newTopicShares(z2mBase, haPrefix, devOf)}
}

func specKey(s *model.Spec) string {
	if s.NoDevice {
		return notifySpecID
	}
	return s.ID
}

// commitSpecs applies spec changes (at least one): the entries of each
// device are compared with its previous ones (ChangeCatalog per added,
// modified or removed id), Gen bumps iff one changed, and the model
// follows.
func (c *Catalog) commitSpecs(tx *txn, changes []model.SpecChange) {
	tx.rebuilt = true
	c.specGen++
	old := c.snap.Load()
	ed := old.edit()
	var cat []Change
	var topics []string
	for _, ch := range changes {
		if ch.Old != nil {
			c.unplug(tx, ch.Old)
		}
		var newEnts map[string]*pilotage.Entry
		if ch.New != nil {
			newEnts = c.plug(ch.New)
			topics = append(topics, routeTopics(ch.New)...)
		}
		cat = c.diffDevice(tx, ed, ch.Old, newEnts, cat)
		if ch.New == nil && ch.Old != nil && !ch.Old.NoDevice {
			delete(c.devLive, ch.Old.ID)
		}
	}
	cat = c.showShares(tx, ed, old, cat)
	if ed.changed {
		sort.Slice(cat, func(i, j int) bool { return cat[i].ID < cat[j].ID })
		gen := old.Gen
		if len(cat) > 0 {
			gen++
		}
		c.snap.Store(ed.done(gen))
		tx.changes = append(tx.changes, cat...)
	}
	cov := c.model.coverage
	c.coverage.Store(&cov)
	c.intern.Trim()
	c.subscribeTopics(tx, topics)
	c.replayTopics(tx, topics)
}

// diffDevice puts a device's new entries into the snapshot edit and takes
// its old ones out, recording what changed; a modified entry's live
// value is forgotten (its meaning changed).
func (c *Catalog) diffDevice(tx *txn, ed *snapEdit, old *model.Spec, newEnts map[string]*pilotage.Entry, cat []Change) []Change {
	if old != nil {
		for i := range old.Entries {
			id := old.Entries[i].ID
			if _, keep := newEnts[id]; keep || c.model.devOf[id] != "" {
				continue
			}
			ed.del(id)
			delete(c.live, id)
			cat = append(cat, Change{Kind: ChangeCatalog, ID: id, Value: "removed", Time: tx.Now})
		}
	}
	for id, e := range newEnts {
		prev, had := ed.shards[shardOf(id)][id]
		switch {
		case !had:
			cat = append(cat, Change{Kind: ChangeCatalog, ID: id, Value: "added", Time: tx.Now})
		case prev.Revision != e.Revision:
			cat = append(cat, Change{Kind: ChangeCatalog, ID: id, Value: "modified", Time: tx.Now})
			delete(c.live, id)
		case prev == e:
			continue
		}
		ed.put(e)
	}
	return cat
}

// unplug takes a spec's routes, actions and marks out of the model, and
// from the subscription the topics nobody routes any more.
func (c *Catalog) unplug(tx *txn, s *model.Spec) {
	m, key := c.model, specKey(s)
	if m.specs[key] != s {
		return
	}
	delete(m.specs, key)
	m.coverage.uncount(s)
	for _, r := range s.Routes {
		if tr, ok := m.routes[r.Topic]; ok {
			if tr.Remove(key) {
				delete(m.routes, r.Topic)
				delete(m.wild, r.Topic)
				if c.extra[r.Topic] {
					delete(c.extra, r.Topic)
					tx.newSubs = true
				}
			} else {
				m.routes[r.Topic] = tr
			}
		}
	}
	m.shares.know(s, -1)
	m.shares.read(s, nil, -1)
	for i := range s.Entries {
		id := s.Entries[i].ID
		if m.devOf[id] == key {
			delete(m.devOf, id)
			delete(m.actions, id)
			m.shares.remove(id)
			delete(m.unsupported, id)
		}
	}
}

// plug puts a spec into the model and returns the entries it adds (an id
// another device holds is skipped and logged).
func (c *Catalog) plug(s *model.Spec) map[string]*pilotage.Entry {
	m, key := c.model, specKey(s)
	ents := s.BuildEntries(c.intern)
	if !s.NoDevice && m.devOf[s.ID] != "" {
		c.log.Warn("duplicate catalog id skipped", "id", s.ID, "device", s.ID)
		return nil
	}
	m.specs[key] = s
	m.coverage.count(s)
	out := make(map[string]*pilotage.Entry, len(ents))
	for i := range ents {
		e := &ents[i]
		if owner := m.devOf[e.ID]; (owner != "" && owner != key) || out[e.ID] != nil {
			c.log.Warn("duplicate catalog id skipped", "id", e.ID, "device", s.ID)
			continue
		}
		m.devOf[e.ID] = key
		out[e.ID] = e
	}
	m.shares.know(s, 1)
	if !s.NoDevice {
		c.declareAvail(s)
	}
	for _, a := range s.Actions {
		if m.devOf[a.ID] == key {
			m.actions[a.ID] = a
			m.shares.add(a, out[a.ID], s)
		}
	}
	m.shares.read(s, out, 1)
	for _, st := range s.States {
		if st.Unsupported != "" {
			m.unsupported[st.ID] = st.Unsupported
			if lv, ok := c.live[st.ID]; ok {
				lv.unsupported, lv.value = st.Unsupported, nil
				c.live[st.ID] = lv
			}
		}
	}
	for _, r := range s.Routes {
		tr := m.routes[r.Topic]
		tr.Add(key, r.Fn)
		m.routes[r.Topic] = tr
		if strings.ContainsAny(r.Topic, "+#") {
			m.wild[r.Topic] = true
		}
	}
	return out
}

func routeTopics(s *model.Spec) []string {
	out := make([]string, 0, len(s.Routes))
	for _, r := range s.Routes {
		out = append(out, r.Topic)
	}
	return out
}

// subscribeTopics adds the routed topics outside the static filters to
// the subscription (the subscriber goroutine applies it; unplug takes
// out the topics no device routes any more).
func (c *Catalog) subscribeTopics(tx *txn, topics []string) {
	for _, t := range topics {
		if _, routed := c.model.routes[t]; !routed || c.extra[t] || c.staticCovers(t) {
			continue
		}
		c.extra[t] = true
		tx.newSubs = true
	}
}

// replayTopics hands the payloads that arrived before their route existed
// to the commit phase, which computes them once the lock is released.
func (c *Catalog) replayTopics(tx *txn, topics []string) {
	if len(c.pending) == 0 {
		return
	}
	sort.Strings(topics)
	for i, t := range topics {
		if i > 0 && topics[i-1] == t {
			continue
		}
		p, ok := c.pending[t]
		if !ok {
			continue
		}
		copied := c.pendingCopy[t]
		delete(c.pending, t)
		delete(c.pendingCopy, t)
		if _, routed := c.model.routes[t]; routed {
			tx.replay = append(tx.replay, topicPayload{t, p, copied})
		}
	}
}

// rebuildSpecs recomputes every device from the sources (a Zigbee2MQTT
// device list, the id registry loaded, the catalog made) and returns the
// changes to the specs in the model, in commit order (compute phase). A
// paced rebuild takes one step (bridge.go) and leaves the rest to
// bridgeLoop.
func (c *Catalog) rebuildSpecs(tx *txn) []model.SpecChange {
	tx.rebuilt = true
	if tx.cont && c.restGen == c.specGen && c.rebuildLeft {
		return c.nextStep() // nothing changed the specs since the last step
	}
	var until time.Time
	if tx.paced {
		until = time.Now().Add(buildStep)
	}
	c.ids.Begin()
	specs, more := c.z2m.Build(c.log, c.ids, until)
	c.z2mIDs = make(map[string]bool, len(specs))
	want := make(map[string]*model.Spec, len(specs)+len(c.ha.Groups)+1)
	for _, s := range specs {
		c.z2mIDs[s.ID] = true
		want[s.ID] = s
	}
	c.ha.RebuildAll(c.log, c.ids, c.z2mIDs)
	c.ids.End(c.z2m.Listed, c.z2m.GroupsListed)
	for _, s := range c.ha.Current() {
		if want[s.ID] == nil {
			want[s.ID] = s
		}
	}
	if c.notify == nil {
		if ns := notifySpecs(c.opts.Notify, &c.notices); len(ns) > 0 {
			c.notify = ns[0]
		}
	}
	if c.notify != nil {
		want[notifySpecID] = c.notify
	}
	for id, s := range c.local {
		if want[id] == nil {
			want[id] = s
		}
	}
	var changes []model.SpecChange
	for id, s := range c.model.specs {
		if w := want[id]; w != s {
			changes = append(changes, model.SpecChange{Old: s, New: w})
		}
	}
	for id, s := range want {
		if _, had := c.model.specs[id]; !had {
			changes = append(changes, model.SpecChange{New: s})
		}
	}
	sortChanges(changes)
	c.rest, c.rebuildLeft, c.buildLeft = nil, false, false
	if tx.paced {
		return c.takeStep(changes, more)
	}
	return changes
}

// sortChanges sorts spec changes in commit order (changeOrder).
func sortChanges(changes []model.SpecChange) {
	keys := make([]string, len(changes))
	for i := range changes {
		keys[i] = changeOrder(changes[i])
	}
	sort.Sort(byKey{keys, changes})
}

type byKey struct {
	keys    []string
	changes []model.SpecChange
}

func (b byKey) Len() int           { return len(b.keys) }
func (b byKey) Less(i, j int) bool { return b.keys[i] < b.keys[j] }
func (b byKey) Swap(i, j int) {
	b.keys[i], b.keys[j] = b.keys[j], b.keys[i]
	b.changes[i], b.changes[j] = b.changes[j], b.changes[i]
}

// changeOrder commits removals first, then Zigbee2MQTT devices, then Home
// Assistant ones, then the notification channels, then the local devices
// (the first holder of an entry id keeps it).
func changeOrder(ch model.SpecChange) string {
	if ch.New == nil {
		return "0" + specKey(ch.Old)
	}
	switch ch.New.Source {
	case "zigbee2mqtt":
		return "1" + ch.New.ID
	case "homeassistant":
		return "2" + ch.New.ID
	case "pilothouse":
		return "4" + ch.New.ID
	}
	return "3"
}
