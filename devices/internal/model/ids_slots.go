package model

import "log/slog"

// SlotOwner returns the discovery topic whose config the entity key k's
// segment was pinned for ("" if none).
func (t *IDTable) SlotOwner(k IDKey) string {
	if id, ok := t.Cur[k]; ok {
		return t.ByID[id].Base
	}
	for _, id := range t.Kept[k] {
		return t.ByID[id].Base
	}
	return ""
}

// LeaveSlot is an entity leaving its segment id on a device (its config
// removed or ignored, or it moved to another device): the segment stays
// reserved for it, as a device's id does. Nothing when k holds another
// segment now.
func (t *IDTable) LeaveSlot(k IDKey, id string) {
	if t.Cur[k] != id {
		return
	}
	t.leave(id, "entity left", slog.LevelDebug)
	if t.now == nil {
		delete(t.present, k)
		t.expire()
	}
}
