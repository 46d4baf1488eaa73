package devices

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"
)

// IDRegistry persists which device owns which catalog device id, so that
// ids are first come, first served and stay put across restarts whatever
// order discovery messages arrive in (as Home Assistant's entity registry
// pins entity ids to unique ids). storage.Store implements it; the catalog
// reads it once at Start and writes only when discovery assigns or
// releases an id, never per state message.
type IDRegistry interface {
	LoadDeviceIDs(ctx context.Context) ([]IDAssignment, error)
	// SaveDeviceIDs removes the assignments of the del keys and stores put
	// (replacing the keys' earlier assignments), as one transaction.
	SaveDeviceIDs(ctx context.Context, put []IDAssignment, del []string) error
}

// IDAssignment pins a device id to a device's stable key.
type IDAssignment struct {
	// Key identifies the device whatever its name: "z2m:<ieee address>"
	// (also the key of Zigbee2MQTT's own Home Assistant discovery of that
	// device, identifier "zigbee2mqtt_<ieee>"), "ha:ids:<first identifier>",
	// "ha:cns:<type>=<value>", "ha:uid:<component>/<unique_id>" or
	// "ha:topic:<discovery topic>" for an entity without a device.
	Key string
	// ID is the device id; its states, events and actions derive from it.
	ID string
	// Base is the id the device's name asks for: ID itself, or ID less a
	// "_<n>" suffix when another device had it first. A device whose name
	// changes (another base) gets a new id; the old one is released.
	Base string
}

const z2mKeyPrefix, haKeyPrefix = "z2m:", "ha:"

// idKey is a device's key in memory: IDAssignment.Key without its "z2m:"
// or "ha:" prefix, so that making one allocates nothing (a Zigbee2MQTT key
// is the device's IEEE address string itself).
type idKey struct {
	z2m bool
	s   string
}

func (k idKey) String() string {
	if k.z2m {
		return z2mKeyPrefix + k.s
	}
	return haKeyPrefix + k.s
}

func parseIDKey(s string) (idKey, bool) {
	if rest, ok := strings.CutPrefix(s, z2mKeyPrefix); ok && rest != "" {
		return idKey{z2m: true, s: rest}, true
	}
	if rest, ok := strings.CutPrefix(s, haKeyPrefix); ok && rest != "" {
		return idKey{s: rest}, true
	}
	return idKey{}, false
}

// z2mKey is a Zigbee2MQTT device's key: its IEEE address, or its name for
// the odd device listed without one.
func z2mKey(h *z2mHead) idKey {
	if h.ieee == "" {
		return idKey{z2m: true, s: "name=" + h.friendlyName}
	}
	return idKey{z2m: true, s: h.ieee}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// saveTimeout bounds one write of the registry.
const saveTimeout = 5 * time.Second

type idVal struct{ id, base string }

// idTable is the catalog's copy of the registry: every key holds at most
// one id and every id at most one key. A rebuild claims the id of each
// device it builds; keys not claimed by a rebuild that were present in the
// previous one (the device left: discovery removed, or gone from the
// Zigbee2MQTT device list) are released. A key not seen since the start
// keeps its id: its discovery may simply not have arrived yet. Changes
// wait in put/del until saved.
type idTable struct {
	byKey   map[idKey]idVal
	byID    map[string]idKey
	present map[idKey]bool // keys claimed or kept by the last rebuild
	now     map[idKey]bool // keys claimed or kept by the running rebuild
	put     map[idKey]bool // assigned, not saved yet
	del     map[idKey]bool // released, not saved yet
}

func newIDTable() *idTable {
	return &idTable{byKey: map[idKey]idVal{}, byID: map[string]idKey{}, present: map[idKey]bool{},
		put: map[idKey]bool{}, del: map[idKey]bool{}}
}

// load adds persisted assignments; one whose key is malformed or whose key
// or id is taken already (loaded twice, or assigned before Start) is
// skipped and returned.
func (t *idTable) load(as []IDAssignment) (skipped []IDAssignment) {
	for _, a := range as {
		k, ok := parseIDKey(a.Key)
		if _, dup := t.byKey[k]; !ok || dup || a.ID == "" || a.Base == "" {
			skipped = append(skipped, a)
			continue
		}
		if _, dup := t.byID[a.ID]; dup {
			skipped = append(skipped, a)
			continue
		}
		t.byKey[k], t.byID[a.ID] = idVal{a.ID, a.Base}, k
	}
	return skipped
}

func (t *idTable) begin() { t.now = make(map[idKey]bool, len(t.present)) }

// keep marks key present without claiming an id (a disabled device keeps
// its id for when it comes back).
func (t *idTable) keep(key idKey) { t.now[key] = true }

// claim returns the id of key for a device whose name asks for base: its
// pinned id while base is unchanged, else base, or base_2, base_3, … when
// another key holds it. ok is false for an empty base, and when the running
// rebuild has claimed key already (two devices claiming one identity: the
// first wins).
func (t *idTable) claim(key idKey, base string) (id string, ok bool) {
	if t.now[key] || base == "" {
		return "", false
	}
	t.now[key] = true
	if v, has := t.byKey[key]; has {
		if v.base == base {
			return v.id, true
		}
		t.release(key) // renamed: the new name's id, first come
	}
	return t.assign(key, base), true
}

// assign gives key the id base, or base_2, base_3, … when it is taken.
func (t *idTable) assign(key idKey, base string) string {
	id := base
	for n := 2; ; n++ {
		if _, taken := t.byID[id]; !taken {
			break
		}
		id = base + "_" + strconv.Itoa(n)
	}
	t.byKey[key], t.byID[id], t.put[key] = idVal{id, base}, key, true
	delete(t.del, key)
	return id
}

// Outside a full rebuild (begin … end) a Home Assistant device claims,
// keeps and leaves its key on its own: inRebuild tells the two apart, and
// the *Any methods do what the running mode needs.

func (t *idTable) inRebuild() bool { return t.now != nil }

// taken reports whether another device holds key: claimed by the running
// rebuild, or present outside one.
func (t *idTable) taken(key idKey) bool {
	if t.now != nil {
		return t.now[key]
	}
	return t.present[key]
}

func (t *idTable) claimAny(key idKey, base string) (string, bool) {
	if t.now != nil {
		return t.claim(key, base)
	}
	if base == "" {
		return "", false
	}
	t.present[key] = true
	if v, has := t.byKey[key]; has {
		if v.base == base {
			return v.id, true
		}
		t.release(key)
	}
	return t.assign(key, base), true
}

func (t *idTable) keepAny(key idKey) {
	if t.now != nil {
		t.now[key] = true
		return
	}
	t.present[key] = true
}

// leave releases key of a device that is gone (a rebuild releases what it
// does not claim at its end).
func (t *idTable) leave(key idKey) {
	if t.now != nil || !t.present[key] {
		return
	}
	delete(t.present, key)
	t.release(key)
}

// share makes the table keep the spec's copy of key's id (a substring of
// the spec's own strings) rather than one more string per device.
func (t *idTable) share(key idKey, id string) {
	if v, ok := t.byKey[key]; ok && v.id == id {
		if v.base == v.id {
			v.base = id
		}
		v.id = id
		t.byKey[key] = v
		delete(t.byID, id)
		t.byID[id] = key
	}
}

func (t *idTable) release(key idKey) {
	v, ok := t.byKey[key]
	if !ok {
		return
	}
	delete(t.byKey, key)
	delete(t.byID, v.id)
	delete(t.put, key)
	t.del[key] = true
}

// end releases the ids of keys that left since the previous rebuild and,
// once a Zigbee2MQTT device list is known (z2mListed), of every Zigbee2MQTT
// key it no longer holds: that list is complete, so a device removed while
// Pilothouse was down does not keep its id reserved.
func (t *idTable) end(z2mListed bool) {
	for k := range t.present {
		if !t.now[k] {
			t.release(k)
		}
	}
	if z2mListed {
		for k := range t.byKey {
			if k.z2m && !t.now[k] {
				t.release(k)
			}
		}
	}
	t.present, t.now = t.now, nil
}

// pending returns the unsaved changes, sorted.
func (t *idTable) pending() (put []IDAssignment, del []string) {
	for k := range t.put {
		v := t.byKey[k]
		put = append(put, IDAssignment{Key: k.String(), ID: v.id, Base: v.base})
	}
	for k := range t.del {
		del = append(del, k.String())
	}
	sort.Slice(put, func(i, j int) bool { return put[i].Key < put[j].Key })
	sort.Strings(del)
	return put, del
}

// saved forgets the changes a successful save stored.
func (t *idTable) saved(put []IDAssignment, del []string) {
	for _, a := range put {
		if k, ok := parseIDKey(a.Key); ok && t.byKey[k] == (idVal{a.ID, a.Base}) {
			delete(t.put, k)
		}
	}
	for _, s := range del {
		if k, ok := parseIDKey(s); ok {
			delete(t.del, k)
		}
	}
}

// loadIDs reads the registry into the catalog (Start, before subscribing)
// and rebuilds, so that devices known already take their pinned ids.
func (c *Catalog) loadIDs(ctx context.Context) error {
	if c.opts.IDs == nil {
		return nil
	}
	as, err := c.opts.IDs.LoadDeviceIDs(ctx)
	if err != nil {
		return err
	}
	c.ingest.Lock()
	defer c.ingest.Unlock()
	c.mu.Lock()
	for _, a := range c.ids.load(as) {
		c.log.Warn("device id registry: conflicting assignment ignored", "key", a.Key, "id", a.ID)
	}
	tx := c.begin()
	c.rebuildLocked(tx)
	subs := c.finish(tx)
	c.mu.Unlock()
	for _, ch := range tx.changes {
		for _, fn := range subs {
			fn(ch)
		}
	}
	tx.end()
	c.saveIDs()
	return nil
}

// saveIDs writes the id changes of the last rebuilds (ingest lock held, not
// mu). A failed write is logged and retried after the next rebuild; the
// ids hold in memory meanwhile.
func (c *Catalog) saveIDs() {
	put, del := c.ids.pending()
	if len(put)+len(del) == 0 {
		return
	}
	if c.opts.IDs == nil {
		c.ids.saved(put, del)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), saveTimeout)
	defer cancel()
	if err := c.opts.IDs.SaveDeviceIDs(ctx, put, del); err != nil {
		c.log.Error("device id registry: saving failed; the ids hold until restart and the save is retried at the next discovery change",
			"assigned", len(put), "released", len(del), "err", err)
		return
	}
	c.ids.saved(put, del)
}
