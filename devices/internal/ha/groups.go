package ha

import (
	"log/slog"
	"sort"
	"strings"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// Home Assistant discovery is kept by device: a discovery message changes
// one entity (or the components of one device topic), and only the
// devices those entities belong to, before and after, are rebuilt.

// haGroupState is one device of Home Assistant discovery: its entities by
// discovery key, the registry key it holds and its current spec.
type haGroupState struct {
	key    string
	ents   map[string]*haEntity
	regKey model.IDKey
	held   bool   // regKey is claimed by this device
	fp     string // what spec was built from
	spec   *model.Spec
	slots  map[model.IDKey]string // entity key -> the segment id it held on the device
}

// uidSlot is the entities sharing one unique_id: the owner counts, the
// others are ignored (as Home Assistant ignores them) until it leaves;
// then the one whose topic holds the unique_id's segment in the id table
// (its config came first, maybe before a restart) takes its place, else
// the earliest to arrive. The config whose topic holds the segment also
// takes the unique_id back from one that arrived before it (after a
// restart, retained configs come in any order).
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

// put stores the entity at its key, replacing the one there (an update
// keeps the unique_id it owns, and when it was first seen).
func (h *Source) put(log *slog.Logger, e *haEntity) {
	h.nextVer++
	e.ver, e.seen = h.nextVer, h.nextVer
	dk := e.dedupKey()
	if old := h.entities[e.key]; old != nil {
		e.seen = old.seen
		if slot := h.uids[dk]; slot != nil && old.dedupKey() == dk && slot.owner == e.key {
			h.leave(old)
			h.entities[e.key] = e
			h.join(e)
			return
		}
		h.drop(log, e.key)
	}
	h.entities[e.key] = e
	if dk != "" {
		slot := h.uids[dk]
		if slot == nil {
			slot = &uidSlot{holders: map[string]bool{}}
			h.uids[dk] = slot
		}
		slot.holders[e.key] = true
		if slot.owner != "" && !h.holdsSegment(e) {
			log.Warn("discovery entity ignored: its unique_id is another's", "topic", e.key, "first", slot.owner)
			return
		}
		if slot.owner != "" {
			log.Warn("discovery entity ignored: the config holding its unique_id's segment is back", "topic", slot.owner, "holder", e.key)
			h.leave(h.entities[slot.owner])
		}
		slot.owner = e.key
	}
	h.join(e)
}

// holdsSegment reports whether e's topic holds its unique_id's segment in
// the id table.
func (h *Source) holdsSegment(e *haEntity) bool {
	k, ok := uidSlotKey(e)
	return ok && h.ids != nil && h.ids.SlotOwner(k) == e.key
}

// drop removes the entity at key; when it owned a unique_id, the next
// holder takes its place.
func (h *Source) drop(log *slog.Logger, key string) bool {
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
			slot.owner = h.nextOwner(slot)
			h.join(h.entities[slot.owner])
		}
	}
	return true
}

// nextOwner picks the holder that takes a unique_id its owner left: the
// one whose topic holds the segment, else the earliest to arrive (never
// the one whose topic sorts first).
func (h *Source) nextOwner(slot *uidSlot) string {
	best := ""
	for k := range slot.holders {
		e := h.entities[k]
		if h.holdsSegment(e) {
			return k
		}
		if best == "" || e.seen < h.entities[best].seen {
			best = k
		}
	}
	return best
}

func (h *Source) join(e *haEntity) {
	dk := e.devKey()
	g := h.Groups[dk]
	if g == nil {
		g = &haGroupState{key: dk, ents: map[string]*haEntity{}}
		h.Groups[dk] = g
	}
	g.ents[e.key] = e
	h.dirty[dk] = true
}

func (h *Source) leave(e *haEntity) {
	dk := e.devKey()
	if g := h.Groups[dk]; g != nil && g.ents[e.key] == e {
		delete(g.ents, e.key)
		h.dirty[dk] = true
	}
}

// RebuildAll rebuilds every device, inside a full rebuild.
func (h *Source) RebuildAll(log *slog.Logger, ids *model.IDTable, natives map[string]bool) {
	for dk := range h.Groups {
		h.dirty[dk] = true
	}
	h.Rebuild(log, ids, natives)
}

// Current lists the built devices.
func (h *Source) Current() []*model.Spec {
	out := make([]*model.Spec, 0, len(h.Groups))
	for _, g := range h.Groups {
		if g.spec != nil {
			out = append(out, g.spec)
		}
	}
	return out
}

// Rebuild builds the changed devices, in claim order, and returns their
// spec changes. Each device claims its id under its stable key (first
// come, first served: see model.IDTable); one that Zigbee2MQTT lists natively
// (natives, or its key taken) is left to the native one.
func (h *Source) Rebuild(log *slog.Logger, ids *model.IDTable, natives map[string]bool) []model.SpecChange {
	keys := make([]string, 0, len(h.dirty))
	for dk := range h.dirty {
		keys = append(keys, dk)
	}
	clear(h.dirty)
	sort.Slice(keys, func(i, j int) bool {
		ri, rj := keyRank(keys[i]), keyRank(keys[j])
		return ri < rj || ri == rj && keys[i] < keys[j]
	})
	var out []model.SpecChange
	for _, dk := range keys {
		g := h.Groups[dk]
		old := g.spec
		h.rebuildGroup(log, ids, natives, g)
		if len(g.ents) == 0 {
			delete(h.Groups, dk)
		}
		if g.spec != old {
			out = append(out, model.SpecChange{Old: old, New: g.spec})
		}
	}
	return out
}

func (h *Source) rebuildGroup(log *slog.Logger, ids *model.IDTable, natives map[string]bool, g *haGroupState) {
	if len(g.ents) == 0 {
		if g.held {
			ids.LeaveKey(g.regKey)
		}
		h.leaveSlots(ids, g, nil)
		g.held, g.spec, g.fp = false, nil, ""
		return
	}
	hg := &haGroup{key: g.key, ents: make([]*haEntity, 0, len(g.ents))}
	for _, k := range sortedKeys(g.ents) {
		hg.ents = append(hg.ents, g.ents[k])
	}
	name := hg.deviceName()
	base := model.FirstNonEmpty(model.Slug(name), model.Slug(strings.SplitN(g.key, ":", 2)[1]))
	key := hg.regKey()
	if g.held && (g.regKey != key || ids.InRebuild()) {
		ids.LeaveKey(g.regKey) // within a full rebuild: nothing, end decides
		g.held = false
	}
	if (!g.held && ids.Taken(key)) || (natives[base] && hg.fromZigbee2MQTT()) {
		ids.KeepAny(key)
		h.leaveSlots(ids, g, nil)
		g.spec, g.fp = nil, ""
		return // Zigbee2MQTT's own discovery of a device it lists natively
	}
	id, ok := ids.ClaimAny(key, base)
	if !ok {
		log.Warn("discovery device skipped: no usable name", "device", name)
		h.leaveSlots(ids, g, nil)
		g.spec, g.fp = nil, ""
		return
	}
	g.regKey, g.held = key, true
	keys := slotKeys(ids, hg.ents, h.entities)
	if fp := hg.fingerprint(id, name, keys); fp != g.fp || g.spec == nil {
		g.fp, g.spec = fp, buildHADevice(log, id, name, hg, slots{ids, id, keys})
		model.SetArea(h.areas, g.spec)
		g.spec.BuildEntries(h.in)
	}
	h.leaveSlots(ids, g, keys)
}

// leaveSlots records the segments the device's entities hold now (keys:
// their entity keys, nil for none) and lets those that no longer hold one
// on it leave theirs, reserved for them.
func (h *Source) leaveSlots(ids *model.IDTable, g *haGroupState, keys map[*haEntity]model.IDKey) {
	var now map[model.IDKey]string
	if len(keys) > 0 {
		now = make(map[model.IDKey]string, len(keys))
	}
	for _, k := range keys {
		ids.KeepAny(k)
		if id, ok := ids.Cur[k]; ok {
			now[k] = id
		}
	}
	for k, id := range g.slots {
		if now[k] != id {
			ids.LeaveSlot(k, id)
		}
	}
	g.slots = now
}
