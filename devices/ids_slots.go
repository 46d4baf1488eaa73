package devices

import "log/slog"

// slotOwner returns the discovery topic whose config the entity key k's
// segment was pinned for ("" if none).
func (t *idTable) slotOwner(k idKey) string {
	if id, ok := t.cur[k]; ok {
		return t.byID[id].base
	}
	for _, id := range t.kept[k] {
		return t.byID[id].base
	}
	return ""
}

// leaveSlot is an entity leaving its segment id on a device (its config
// removed or ignored, or it moved to another device): the segment stays
// reserved for it, as a device's id does. Nothing when k holds another
// segment now.
func (t *idTable) leaveSlot(k idKey, id string) {
	if t.cur[k] != id {
		return
	}
	t.leave(id, "entity left", slog.LevelDebug)
	if t.now == nil {
		delete(t.present, k)
		t.expire()
	}
}
