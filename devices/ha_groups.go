package devices

import (
	"log/slog"
	"sort"
	"strings"
)

// Home Assistant discovery is kept by device: a discovery message changes
// one entity (or the components of one device topic), and only the
// devices those entities belong to, before and after, are rebuilt.

// haGroupState is one device of Home Assistant discovery: its entities by
// discovery key, the registry key it holds and its current spec.
type haGroupState struct {
	key    string
	ents   map[string]*haEntity
	regKey idKey
	held   bool   // regKey is claimed by this device
	fp     string // what spec was built from
	spec   *devSpec
}

// uidSlot is the entities sharing one unique_id: the owner counts, the
// others are ignored (as Home Assistant ignores them) until it leaves.
type uidSlot struct {
	owner   string
	holders map[string]bool
}

// dedupKey is what makes two entities the same one: component and
// unique_id, or a device trigger's topic, type, subtype and payload.
func (e *haEntity) dedupKey() string {
	if uid := e.str("unique_id", ""); uid != "" {
		return "uid:" + e.component + "/" + uid
	}
	if e.component == "device_automation" {
		return "da/" + e.str("topic", "") + "/" + e.str("type", "") + "/" + e.str("subtype", "") + "/" + e.str("payload", "")
	}
	return ""
}

// put stores the entity at its key, replacing the one there.
func (h *haSource) put(log *slog.Logger, e *haEntity) {
	h.drop(log, e.key)
	h.nextVer++
	e.ver = h.nextVer
	h.entities[e.key] = e
	if dk := e.dedupKey(); dk != "" {
		slot := h.uids[dk]
		if slot == nil {
			slot = &uidSlot{holders: map[string]bool{}}
			h.uids[dk] = slot
		}
		slot.holders[e.key] = true
		if slot.owner != "" {
			log.Warn("discovery entity ignored: its unique_id is another's", "topic", e.key, "first", slot.owner)
			return
		}
		slot.owner = e.key
	}
	h.join(e)
}

// drop removes the entity at key; when it owned a unique_id, the next
// holder takes its place.
func (h *haSource) drop(log *slog.Logger, key string) bool {
	e := h.entities[key]
	if e == nil {
		return false
	}
	delete(h.entities, key)
	h.leave(e)
	if dk := e.dedupKey(); dk != "" {
		slot := h.uids[dk]
		delete(slot.holders, key)
		if len(slot.holders) == 0 {
			delete(h.uids, dk)
		} else if slot.owner == key {
			slot.owner = sortedKeys(slot.holders)[0]
			h.join(h.entities[slot.owner])
		}
	}
	return true
}

func (h *haSource) join(e *haEntity) {
	dk := e.devKey()
	g := h.groups[dk]
	if g == nil {
		g = &haGroupState{key: dk, ents: map[string]*haEntity{}}
		h.groups[dk] = g
	}
	g.ents[e.key] = e
	h.dirty[dk] = true
}

func (h *haSource) leave(e *haEntity) {
	dk := e.devKey()
	if g := h.groups[dk]; g != nil && g.ents[e.key] == e {
		delete(g.ents, e.key)
		h.dirty[dk] = true
	}
}

// rebuildAll rebuilds every device, inside a full rebuild.
func (h *haSource) rebuildAll(log *slog.Logger, ids *idTable, natives map[string]bool) {
	for dk := range h.groups {
		h.dirty[dk] = true
	}
	h.rebuild(log, ids, natives)
}

// current lists the built devices.
func (h *haSource) current() []*devSpec {
	out := make([]*devSpec, 0, len(h.groups))
	for _, g := range h.groups {
		if g.spec != nil {
			out = append(out, g.spec)
		}
	}
	return out
}

// rebuild builds the changed devices, in claim order, and returns their
// spec changes. Each device claims its id under its stable key (first
// come, first served: see idTable); one that Zigbee2MQTT lists natively
// (natives, or its key taken) is left to the native one.
func (h *haSource) rebuild(log *slog.Logger, ids *idTable, natives map[string]bool) []specChange {
	keys := make([]string, 0, len(h.dirty))
	for dk := range h.dirty {
		keys = append(keys, dk)
	}
	clear(h.dirty)
	sort.Slice(keys, func(i, j int) bool {
		ri, rj := keyRank(keys[i]), keyRank(keys[j])
		return ri < rj || ri == rj && keys[i] < keys[j]
	})
	var out []specChange
	for _, dk := range keys {
		g := h.groups[dk]
		old := g.spec
		h.rebuildGroup(log, ids, natives, g)
		if len(g.ents) == 0 {
			delete(h.groups, dk)
		}
		if g.spec != old {
			out = append(out, specChange{old: old, new: g.spec})
		}
	}
	return out
}

func (h *haSource) rebuildGroup(log *slog.Logger, ids *idTable, natives map[string]bool, g *haGroupState) {
	if len(g.ents) == 0 {
		if g.held {
			ids.leave(g.regKey)
		}
		g.held, g.spec, g.fp = false, nil, ""
		return
	}
	hg := &haGroup{key: g.key, ents: make([]*haEntity, 0, len(g.ents))}
	for _, k := range sortedKeys(g.ents) {
		hg.ents = append(hg.ents, g.ents[k])
	}
	name := hg.deviceName()
	base := firstNonEmpty(slug(name), slug(strings.SplitN(g.key, ":", 2)[1]))
	key := hg.regKey()
	if g.held && (g.regKey != key || ids.inRebuild()) {
		ids.leave(g.regKey)
		g.held = false
	}
	if (!g.held && ids.taken(key)) || (natives[base] && hg.fromZigbee2MQTT()) {
		ids.keepAny(key)
		g.spec, g.fp = nil, ""
		return // Zigbee2MQTT's own discovery of a device it lists natively
	}
	id, ok := ids.claimAny(key, base)
	if !ok {
		log.Warn("discovery device skipped: no usable name", "device", name)
		g.spec, g.fp = nil, ""
		return
	}
	g.regKey, g.held = key, true
	if fp := hg.fingerprint(id, name); fp != g.fp || g.spec == nil {
		g.fp, g.spec = fp, buildHADevice(log, id, name, hg)
		g.spec.buildEntries(h.in)
	}
}
