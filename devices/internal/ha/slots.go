package ha

import (
	"strings"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// Within a Home Assistant device, each discovery entity holds a segment
// of the device's ids (outdoor_weather.temperature), pinned in the id
// table under an entity key ("ent:uid:<component>/<unique_id>", else
// "ent:topic:<topic>") as id "<device id>#<segment>", with the topic of
// the config that holds it as the row's base.

// uidSlotKey is the key of a Home Assistant discovery entity's segment
// by its unique_id ("" when it has none).
func uidSlotKey(e *haEntity) (model.IDKey, bool) {
	uid := e.str("unique_id", "")
	return model.IDKey{S: "ent:uid:" + e.component + "/" + uid}, uid != ""
}

// slotKeys returns the key of each of a device's discovery entities'
// segment within the device (all: every accepted entity, by topic): its
// unique_id's, or its topic's when it has none or when another config
// holds its unique_id and has not left since this run saw it (not seen
// yet after a restart counts as holding: its config may simply not have
// arrived yet), so that a config reusing a unique_id never takes the
// segment of the one that came first. A config holding a unique_id,
// present, is recorded as seen.
func slotKeys(t *model.IDTable, ents []*haEntity, all map[string]*haEntity) map[*haEntity]model.IDKey {
	keys := make(map[*haEntity]model.IDKey, len(ents))
	for _, e := range ents {
		topic := e.key
		k, ok := uidSlotKey(e)
		owner := t.SlotOwner(k)
		switch {
		case !ok:
			k = model.IDKey{S: "ent:topic:" + topic}
		case owner == topic:
			t.OwnerSeen[k] = true
		case owner != "" && (all[owner] != nil || !t.OwnerSeen[k]):
			k = model.IDKey{S: "ent:topic:" + topic}
		}
		keys[e] = k
	}
	return keys
}

// slots is one device's view of the segments its discovery entities hold
// (entity keys, ids "<device id>#<segment>"): like device ids, first come
// and pinned, so that an entity joining a device (a discovery config with
// the device's identifiers) never takes the segment, and so the state id,
// of one that was there first, whatever their topics' order.
type slots struct {
	t    *model.IDTable
	dev  string
	keys map[*haEntity]model.IDKey // from slotKeys
}

// key returns e's key.
func (s slots) key(e *haEntity) model.IDKey {
	if k, ok := s.keys[e]; ok {
		return k
	}
	return model.IDKey{S: "ent:topic:" + e.key}
}

// pinned returns the segment k holds or keeps on this device.
func (s slots) pinned(k model.IDKey) (string, bool) {
	if s.t == nil {
		return "", false
	}
	for _, id := range append([]string{s.t.Cur[k]}, s.t.Kept[k]...) {
		if seg, ok := strings.CutPrefix(id, s.dev+"#"); ok {
			return seg, true
		}
	}
	return "", false
}

// free reports whether seg may go to k: no other key holds or keeps it on
// this device.
func (s slots) free(seg string, k model.IDKey) bool {
	if s.t == nil {
		return true
	}
	r, ok := s.t.ByID[s.dev+"#"+seg]
	return !ok || r.Key == k
}

// pin makes seg k's segment on this device, for the config on topic (k
// leaves any other: a slot on another device id is no use to it).
func (s slots) pin(k model.IDKey, seg, topic string) {
	if s.t == nil {
		return
	}
	id := s.dev + "#" + seg
	s.t.OwnerSeen[k] = true
	if r, ok := s.t.ByID[id]; ok && r.Key == k && r.Left.IsZero() && r.Base == topic {
		return
	}
	if old, ok := s.t.Cur[k]; ok {
		s.t.Drop(old)
	}
	s.t.Put(id, model.IDRow{Key: k, Base: topic})
}
