package devices

import (
	"strings"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/pilotage"
)

// An action is as risky as the device behind the topics it publishes to,
// and anyone on the bus can announce a harmless switch whose command_topic
// is a lock's. So an action that writes a command topic another action
// also writes (or one Zigbee2MQTT reads as a command to the same device:
// <device>/set/<prop>, <device>/<endpoint>/set) is shown at the highest
// risk among them, and its description says why. The commit phase keeps
// the writers of every topic, so its work follows the actions a commit
// changes, never the catalog's size or the state messages.
//
// Inside Zigbee2MQTT's base topic a name Pilothouse does not know may
// still reach a device (a group, an IEEE address, the bridge's requests),
// so an action that is not Zigbee2MQTT's own and writes there is shown at
// security unless its topic names a device Zigbee2MQTT listed (by friendly
// name, or by IEEE address, which files the device's actions under both)
// or a group it listed: a command to a group reaches every member, so the
// action is shown at the group's risk (its riskiest member's; security
// when a member is not known), saying which member.
//
// What an action's topics change of what Pilothouse reads (discovery, the
// states of devices) raises it too: topicread.go.

// topicShares is the writers of every command topic (model-owned:
// changed only by the commit phase, under c.ingest and c.mu).
type topicShares struct {
	base    string                     // Zigbee2MQTT's base topic and "/"
	known   map[string]int32           // friendly name or IEEE address of a Zigbee2MQTT device or group listed -> how many
	groups  map[string]model.GroupRisk // a Zigbee2MQTT group's friendly name -> how risky a command to it is
	keys    map[string]shareKey
	writers map[string]writer // action id -> what it writes
	// This commit's: the hints of the keys it touched as they were
	// before it, and the writers it added.
	touched map[string]pilotage.RiskHints
	added   []string
	// What Pilothouse reads: Home Assistant's discovery prefix and "/",
	// and the topics read into a state riskier than control.
	disc  string
	reads map[string][]reader
	devOf map[string]string // entry id -> device key (the route table's)
}

// shareKey is one topic's writers: those publishing to it (exact), and
// those publishing to a topic Zigbee2MQTT reads as a command to it
// (under). The latter count only beside the former: two topics under one
// /set that nobody writes name no device in common. Most topics have one
// writer, held without a map.
type shareKey struct {
	one     string           // the only writer's action id ("" when none, or when more holds them)
	oneRole uint8            // its roles
	more    map[string]uint8 // action id -> roles, once a second writer came
	n       [2]hintCount     // of the exact, of the under
}

const (
	roleExact uint8 = 1 << iota
	roleUnder
)

func (k *shareKey) role(id string) uint8 {
	if k.more != nil {
		return k.more[id]
	}
	if k.one == id {
		return k.oneRole
	}
	return 0
}

// setRole sets the roles of writer id (none takes it out).
func (k *shareKey) setRole(id string, r uint8) {
	switch {
	case k.more != nil && r == 0:
		delete(k.more, id)
	case k.more != nil:
		k.more[id] = r
	case k.one == "" || k.one == id:
		k.one, k.oneRole = id, r
		if r == 0 {
			k.one = ""
		}
	default:
		k.more = map[string]uint8{k.one: k.oneRole, id: r}
		k.one, k.oneRole = "", 0
	}
}

func (k *shareKey) empty() bool { return k.one == "" && len(k.more) == 0 }

// writerIDs are the action ids of the key's writers.
func (k *shareKey) writerIDs() []string {
	if k.more == nil {
		return []string{k.one}
	}
	out := make([]string, 0, len(k.more))
	for id := range k.more {
		out = append(out, id)
	}
	return out
}

// hintCount counts the writers of a key by hint.
type hintCount struct{ members, writes, destructive, openWorld int32 }

func (h *hintCount) add(r pilotage.RiskHints, d int32) {
	h.members += d
	if !r.ReadOnly {
		h.writes += d
	}
	if r.Destructive {
		h.destructive += d
	}
	if r.OpenWorld {
		h.openWorld += d
	}
}

// writer is one action that publishes to command topics.
type writer struct {
	base   *pilotage.Entry // its entry as its device built it
	writes []string        // its topics (model.Action.Writes)
	alias  string          // a Zigbee2MQTT device's set topic under its IEEE address ("" for none)
	under  bool            // its topics may reach a Zigbee2MQTT device's set (not one of Zigbee2MQTT's own devices')
}

// writeKey is one key an action's topic is filed under.
type writeKey struct {
	topic, key string
	role       uint8
}

// keys are the keys w's topics are filed under.
func (w writer) keys() []writeKey {
	out := make([]writeKey, 0, len(w.writes))
	if w.alias != "" {
		out = append(out, writeKey{w.alias, w.alias, roleExact})
	}
	for _, topic := range w.writes {
		out = append(out, writeKey{topic, topic, roleExact})
		if !w.under {
			continue
		}
		for _, k := range setTargets(topic) {
			out = append(out, writeKey{topic, k, roleUnder})
		}
	}
	return out
}

func newTopicShares(z2mBase, haPrefix string, devOf map[string]string) topicShares {
	return topicShares{base: z2mBase + "/", known: map[string]int32{}, groups: map[string]model.GroupRisk{}, keys: map[string]shareKey{}, writers: map[string]writer{},
		touched: map[string]pilotage.RiskHints{}, disc: haPrefix + "/", reads: map[string][]reader{}, devOf: devOf}
}

// z2mNames are the names Zigbee2MQTT takes in a command topic for the
// device of spec s: its friendly name and its IEEE address ("" for none).
func (t *topicShares) z2mNames(s *model.Spec) [2]string {
	if s.Source != "zigbee2mqtt" || !strings.HasPrefix(s.Z2MTopic, t.base) {
		return [2]string{}
	}
	name := s.Z2MTopic[len(t.base):]
	if s.Z2MAddr == name {
		return [2]string{name}
	}
	return [2]string{name, s.Z2MAddr}
}

// know counts the Zigbee2MQTT device of spec s in (d 1) or out (d -1) of
// the devices listed; the writers of a set topic it starts or stops
// naming are checked again in this commit.
func (t *topicShares) know(s *model.Spec, d int32) {
	t.knowGroup(s, d)
	for _, name := range t.z2mNames(s) {
		if name == "" {
			continue
		}
		n := t.known[name] + d
		if n <= 0 {
			delete(t.known, name)
		} else {
			t.known[name] = n
		}
		if (n > 0) == (n-d > 0) {
			continue
		}
		if k, ok := t.keys[t.base+name+"/set"]; ok {
			t.added = append(t.added, k.writerIDs()...)
		}
	}
}

// knowGroup files (d 1) or takes out (d -1) the risk of a command to
// the group of spec s (none for a device); the writers of its set topic
// are checked again in this commit.
func (t *topicShares) knowGroup(s *model.Spec, d int32) {
	name := t.z2mNames(s)[0]
	if s.Group == nil || name == "" {
		return
	}
	if d > 0 {
		t.groups[name] = *s.Group
	} else if t.groups[name] == *s.Group {
		delete(t.groups, name)
	}
	if k, ok := t.keys[t.base+name+"/set"]; ok {
		t.added = append(t.added, k.writerIDs()...)
	}
}

// group is the risk of a command on topic to a Zigbee2MQTT group it
// names (<base>/<group>/set, /set/<prop>, /<endpoint>/set), and why
// ("" for none).
func (t *topicShares) group(topic string) (pilotage.RiskHints, string) {
	i := setSegment(topic)
	if len(t.groups) == 0 || i < 0 || !strings.HasPrefix(topic, t.base) {
		return pilotage.RiskHints{}, ""
	}
	for _, k := range append(setTargets(topic), topic[:i+4]) {
		if len(k) <= len(t.base)+4 {
			continue
		}
		name := k[len(t.base) : len(k)-4]
		if g, ok := t.groups[name]; ok && g.Why != "" {
			return g.Hints, "its command topic " + topic + " reaches every member of Zigbee2MQTT group " + name + ": " + g.Why
		}
	}
	return pilotage.RiskHints{}, ""
}

// z2mAlias is the topic of writes under device s's IEEE address when
// writes is its set topic by friendly name ("" otherwise).
func (t *topicShares) z2mAlias(s *model.Spec, writes []string) string {
	names := t.z2mNames(s)
	if len(writes) != 1 || names[1] == "" || writes[0] != s.Z2MTopic+"/set" {
		return ""
	}
	return t.base + names[1] + "/set"
}

// names says whether set topic k (<base>/<x>/set) names a device listed.
func (t *topicShares) names(k string) bool {
	return len(k) > len(t.base)+4 && t.known[k[len(t.base):len(k)-4]] > 0
}

// unnamed is why topic, inside Zigbee2MQTT's base topic, may reach any
// device ("" when it lies outside or names a device Zigbee2MQTT listed).
func (t *topicShares) unnamed(topic string) string {
	if !strings.HasPrefix(topic, t.base) {
		return ""
	}
	if strings.HasPrefix(topic[len(t.base):], "bridge/") {
		return "its command topic " + topic + " is a request to the Zigbee2MQTT bridge (Zigbee2MQTT's bridge requests manage the whole network)"
	}
	if i := setSegment(topic); i >= 0 {
		if t.names(topic[:i+4]) {
			return ""
		}
		for _, k := range setTargets(topic) {
			if t.names(k) {
				return ""
			}
		}
	}
	return "its command topic " + topic + " is inside Zigbee2MQTT's " + t.base +
		" and names no device Pilothouse knows (a group, an address, or the bridge's requests can reach any device)"
}

// hints is the aggregate of the writers of key (read-only for none).
func (t *topicShares) hints(key string) pilotage.RiskHints {
	k := t.keys[key]
	c := k.n[0]
	if c.members > 0 {
		c.writes += k.n[1].writes
		c.destructive += k.n[1].destructive
		c.openWorld += k.n[1].openWorld
	}
	return pilotage.RiskHints{ReadOnly: c.writes == 0, Destructive: c.destructive > 0, OpenWorld: c.openWorld > 0}
}

func (t *topicShares) touch(key string) {
	if _, ok := t.touched[key]; !ok {
		t.touched[key] = t.hints(key)
	}
}

// add files action a of device s, whose entry is base, under the keys of
// its topics; those of an action that is not a Zigbee2MQTT device's own
// (a group's among them) may reach a Zigbee2MQTT device's set. An action that only reads (a Zigbee2MQTT
// /get) is not filed: it changes nothing.
func (t *topicShares) add(a *model.Action, base *pilotage.Entry, s *model.Spec) {
	if len(a.Writes) == 0 || base == nil || base.RiskHints.ReadOnly {
		return
	}
	t.remove(a.ID) // filed once, whatever held the id before
	// A group's name may read as a device's endpoint (<device>/<endpoint>):
	// its topics may reach that device's set like any writer's.
	w := writer{base: base, writes: a.Writes, under: s.Source != "zigbee2mqtt" || s.Group != nil}
	if !w.under {
		w.alias = t.z2mAlias(s, a.Writes)
	}
	for _, wk := range w.keys() {
		t.touch(wk.key)
		k := t.keys[wk.key]
		if r := k.role(a.ID); r&wk.role == 0 {
			k.setRole(a.ID, r|wk.role)
			k.n[wk.role>>1].add(base.RiskHints, 1)
			t.keys[wk.key] = k
		}
	}
	t.writers[a.ID] = w
	t.added = append(t.added, a.ID)
}

// remove takes action id out of the keys it is filed under.
func (t *topicShares) remove(id string) {
	w, ok := t.writers[id]
	if !ok {
		return
	}
	delete(t.writers, id)
	for _, wk := range w.keys() {
		k, ok := t.keys[wk.key]
		r := k.role(id)
		if !ok || r&wk.role == 0 {
			continue
		}
		t.touch(wk.key)
		k.n[wk.role>>1].add(w.base.RiskHints, -1)
		k.setRole(id, r&^wk.role)
		if k.empty() {
			delete(t.keys, wk.key)
		} else {
			t.keys[wk.key] = k
		}
	}
}

// setTargets are the topics besides t itself that Zigbee2MQTT reads a
// message on t as a command to: <x>/set for <x>/set/<prop>, and
// <device>/set for <device>/<endpoint>/set (its first /set segment
// decides, as in Zigbee2MQTT's topic pattern).
func setTargets(t string) []string {
	i := setSegment(t)
	if i < 0 {
		return nil
	}
	var out []string
	if set := t[:i+4]; set != t {
		out = append(out, set)
	}
	if j := strings.LastIndexByte(t[:i], '/'); j > 0 {
		out = append(out, t[:j]+"/set")
	}
	return out
}

// setSegment is the index of t's first "/set" segment, or -1.
func setSegment(t string) int {
	for from := 0; from < len(t); {
		k := strings.Index(t[from:], "/set")
		if k < 0 {
			return -1
		}
		end := from + k + 4
		if end == len(t) || t[end] == '/' {
			return from + k
		}
		from = end
	}
	return -1
}

var security = pilotage.HintsOf(pilotage.RiskSecurity)

// effective is the risk hints writer w is shown at and, when they are
// above its own, the reason.
func (t *topicShares) effective(id string, w writer) (pilotage.RiskHints, string) {
	eff, why := t.readRisk(id, w, w.base.RiskHints, "")
	for i := 0; w.under && i < len(w.writes); i++ {
		if r := t.unnamed(w.writes[i]); r != "" && pilotage.Aggregate(eff, security) != eff {
			eff, why = pilotage.Aggregate(eff, security), r
		}
		if h, r := t.group(w.writes[i]); r != "" && pilotage.Aggregate(eff, h) != eff {
			eff, why = pilotage.Aggregate(eff, h), r
		}
	}
	for _, wk := range w.keys() {
		h := t.hints(wk.key)
		agg := pilotage.Aggregate(eff, h)
		if agg == eff {
			continue
		}
		eff = agg
		if wk.role == roleUnder {
			why = "its command topic " + wk.topic + " reaches " + wk.key + ", which an action of risk " + string(pilotage.RiskOf(h)) + " also writes"
		} else {
			why = "its command topic " + wk.topic + " is also written by an action of risk " + string(pilotage.RiskOf(h))
		}
	}
	return eff, why
}

// shown is the entry of writer w as the catalog shows it: its own, or a
// copy at the higher risk saying why (why is then not empty).
func (t *topicShares) shown(id string, w writer) (e *pilotage.Entry, why string) {
	eff, why := t.effective(id, w)
	if eff == w.base.RiskHints {
		return w.base, ""
	}
	raised := *w.base
	raised.RiskHints, raised.Risk = eff, pilotage.RiskOf(eff)
	raised.Description = strings.TrimSpace(raised.Description + " Risk raised from " + string(w.base.Risk) + " to " + string(raised.Risk) + ": " + why + ".")
	raised.Revision = raised.ContentHash()
	return &raised, why
}

// recheck is the writers whose shown entry this commit may have changed:
// those it added, and every writer of a key whose hints it changed.
func (t *topicShares) recheck() map[string]bool {
	out := make(map[string]bool, len(t.added))
	for _, id := range t.added {
		out[id] = true
	}
	for key, before := range t.touched {
		k, ok := t.keys[key]
		if !ok || t.hints(key) == before {
			continue
		}
		for _, id := range k.writerIDs() {
			out[id] = true
		}
	}
	clear(t.touched)
	t.added = t.added[:0]
	return out
}

// showShares puts into the snapshot edit the entries of the writers this
// commit may have changed, as the catalog shows them, and records those
// that changed (a device built again keeps its raised entry unchanged:
// the change diffDevice recorded for it is dropped). A raise not shown
// before is logged.
func (c *Catalog) showShares(tx *txn, ed *snapEdit, old *Snapshot, cat []Change) []Change {
	sh := &c.model.shares
	ids := sh.recheck()
	if len(ids) == 0 {
		return cat
	}
	recorded := map[string]int{}
	for i, ch := range cat {
		if ids[ch.ID] {
			recorded[ch.ID] = i
		}
	}
	drop := map[int]bool{}
	for id := range ids {
		w, isW := sh.writers[id]
		cur, ok := ed.shards[shardOf(id)][id]
		if !isW || !ok {
			continue
		}
		want, why := sh.shown(id, w)
		prev, had := old.Get(id)
		if why != "" && (!had || prev.RiskHints != want.RiskHints) {
			c.log.Warn("action shown at a higher risk than its own: its command topic may reach a riskier device", "id", id, "risk", want.Risk, "reason", why)
		}
		if cur.Revision == want.Revision {
			continue
		}
		ed.put(want)
		i, rec := recorded[id]
		switch {
		case had && prev.Revision == want.Revision:
			if rec {
				drop[i] = true
			}
		case !rec:
			cat = append(cat, Change{Kind: ChangeCatalog, ID: id, Value: "modified", Time: tx.Now})
		}
	}
	if len(drop) == 0 {
		return cat
	}
	kept := cat[:0]
	for i, ch := range cat {
		if !drop[i] {
			kept = append(kept, ch)
		}
	}
	return kept
}
