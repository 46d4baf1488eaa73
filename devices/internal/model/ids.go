package model

import (
	"context"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// IDRegistry persists which device owns which catalog device id, so that
// ids are first come, first served and stay put across restarts whatever
// order discovery messages arrive in (as Home Assistant's entity registry
// pins entity ids to unique ids). storage.Store implements it; the catalog
// reads it once at Start and writes only when discovery assigns, reserves
// or frees an id, never per state message.
type IDRegistry interface {
	LoadDeviceIDs(ctx context.Context) ([]IDAssignment, error)
	// SaveDeviceIDs removes the assignments of the del ids and stores put
	// (replacing the ids' earlier assignments), as one transaction.
	SaveDeviceIDs(ctx context.Context, put []IDAssignment, del []string) error
}

// IDAssignment pins an id to a device's (or a discovery entity's) stable
// key. A key holds at most one id at a time (Left zero) and may keep
// others reserved (Left set).
type IDAssignment struct {
	// Key identifies the device whatever its name: "z2m:<ieee address>"
	// (also the key of Zigbee2MQTT's own Home Assistant discovery of that
	// device, identifier "zigbee2mqtt_<ieee>"), "ha:ids:<first identifier>",
	// "ha:cns:<type>=<value>", "ha:uid:<component>/<unique_id>" or
	// "ha:topic:<discovery topic>" for an entity without a device; or one
	// Home Assistant discovery entity within its device:
	// "ha:ent:uid:<component>/<unique_id>" or "ha:ent:topic:<topic>".
	Key string
	// ID is the device id (its states, events and actions derive from
	// it); for an entity key, "<device id>#<segment>": the segment its
	// states and actions take within the device ("temperature" in
	// outdoor_weather.temperature; "" for the device's primary entity).
	ID string
	// Base is the id the device's name asks for now: ID itself, or ID less
	// a "_<n>" suffix when another device had it first. Home Assistant
	// ids stay with their device whatever its name (as Home Assistant's
	// entity ids do); a device renamed in Zigbee2MQTT takes its new name's
	// id (its topics changed too) and keeps the old one reserved. For an
	// entity key, the discovery topic of the config that holds the
	// segment: of two configs with one unique_id, that one keeps it.
	Base string
	// Left is when the key stopped holding ID (zero while it holds it):
	// its device left (discovery removed, gone from the Zigbee2MQTT device
	// list) or was renamed in Zigbee2MQTT. ID stays reserved for the key
	// until Left plus idReserve: it gets ID back if it returns, and no
	// other device takes ID meanwhile, so a rule naming ID never follows
	// another device.
	Left time.Time
}

const z2mKeyPrefix, haKeyPrefix = "z2m:", "ha:"

// idReserve is how long an id stays reserved for the device that left it;
// maxReserved bounds the reservations, so that discovery configs coming
// and going cannot grow the registry for ever. Beyond it the newest end
// first: churn that fills the table (a flood of device lists) ends its own
// reservations, not those of the devices it pushed out, whose ids rules
// name.
const (
	IDReserve   = 30 * 24 * time.Hour
	maxReserved = 4096
)

// IDKey is a device's key in memory: IDAssignment.Key without its "z2m:"
// or "ha:" prefix, so that making one allocates nothing (a Zigbee2MQTT key
// is the device's IEEE address string itself).
type IDKey struct {
	Z2M bool
	S   string
}

func (k IDKey) String() string {
	if k.Z2M {
		return z2mKeyPrefix + k.S
	}
	return haKeyPrefix + k.S
}

// GroupKey is the key of Zigbee2MQTT group id: "z2m:group:<id>". A
// group keeps its id whatever its name (its number identifies it, as
// Home Assistant's unique_id does an entity).
func GroupKey(id int64) IDKey { return IDKey{Z2M: true, S: groupKeyPrefix + strconv.FormatInt(id, 10)} }

const groupKeyPrefix = "group:"

// group reports whether k is a Zigbee2MQTT group's key.
func (k IDKey) group() bool { return k.Z2M && strings.HasPrefix(k.S, groupKeyPrefix) }

// followsName reports whether k's id follows its device's name: a
// Zigbee2MQTT device's (its topics change with it), not a group's.
func (k IDKey) followsName() bool { return k.Z2M && !k.group() }

func parseIDKey(s string) (IDKey, bool) {
	if rest, ok := strings.CutPrefix(s, z2mKeyPrefix); ok && rest != "" {
		return IDKey{Z2M: true, S: rest}, true
	}
	if rest, ok := strings.CutPrefix(s, haKeyPrefix); ok && rest != "" {
		return IDKey{S: rest}, true
	}
	return IDKey{}, false
}

func FirstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// IDRow is one assignment: id (the map key) belongs to key.
type IDRow struct {
	Key  IDKey
	Base string
	Left time.Time // zero while key holds the id
}

// IDTable is the catalog's copy of the registry. Every id belongs to one
// key; a key holds at most one id (cur) and keeps the ids it left
// reserved. A full rebuild (begin … end) claims the id of each device it
// builds; a key claimed by the previous rebuild but not by this one (its
// device left), and once a Zigbee2MQTT device list is known any
// Zigbee2MQTT key it no longer lists, leaves its id, which stays reserved
// for it (idReserve). Between full rebuilds a Home Assistant device
// claims, keeps and leaves its key on its own (claimAny, keepAny,
// leaveKey), with the same rules: it keeps its id whatever its name, the
// id it leaves stays reserved for it, it gets a reserved id back. A key
// not seen since the start keeps its id: its discovery may simply not
// have arrived yet. Changes wait in dirty until saved.
type IDTable struct {
	log     *slog.Logger
	clock   func() time.Time
	ByID    map[string]IDRow
	Cur     map[IDKey]string   // the id each key holds
	Kept    map[IDKey][]string // the ids reserved for each key
	present map[IDKey]bool     // keys claimed or kept by the last rebuild
	now     map[IDKey]bool     // keys claimed or kept by the running rebuild
	dirty   map[string]bool    // ids stored or removed, not saved yet
	Limit   int                // maxReserved (tests lower it)
	NKept   int                // reservations (the ids in kept)
	// order queues the reservations in the order they began, so that the
	// oldest ends first without a sort; one since dropped or held again is
	// skipped when it comes up (its left no longer matches).
	order []reservation
	// ownerSeen marks the entity keys whose owning discovery topic this
	// run has seen (see slotKeys).
	OwnerSeen map[IDKey]bool
	// Local holds the local devices' ids (helpers): never stored, and
	// never given to a device from the bus, which would take the helper's
	// entries from the rules that name them.
	Local map[string]bool
}

func NewIDTable(log *slog.Logger, clock func() time.Time) *IDTable {
	return &IDTable{log: log, clock: clock, ByID: map[string]IDRow{}, Cur: map[IDKey]string{},
		Kept: map[IDKey][]string{}, present: map[IDKey]bool{}, dirty: map[string]bool{}, Limit: maxReserved,
		OwnerSeen: map[IDKey]bool{}, Local: map[string]bool{}}
}

// Load adds persisted assignments; one whose key is malformed, whose id is
// taken already, or that would be a second id held by one key is skipped
// and returned.
func (t *IDTable) Load(as []IDAssignment) (skipped []IDAssignment) {
	for _, a := range as {
		k, ok := parseIDKey(a.Key)
		_, dupID := t.ByID[a.ID]
		_, dupKey := t.Cur[k]
		if !ok || dupID || a.ID == "" || a.Base == "" && !strings.Contains(a.ID, "#") || a.Left.IsZero() && dupKey {
			skipped = append(skipped, a)
			continue
		}
		t.Put(a.ID, IDRow{Key: k, Base: a.Base, Left: a.Left})
		delete(t.dirty, a.ID)
	}
	t.sortOrder()
	return skipped
}

// Put stores row under id, keeping cur and kept in step.
func (t *IDTable) Put(id string, r IDRow) {
	t.Drop(id)
	t.ByID[id] = r
	if r.Left.IsZero() {
		t.Cur[r.Key] = id
	} else {
		t.Kept[r.Key] = append(t.Kept[r.Key], id)
		t.NKept++
		t.order = append(t.order, reservation{id, r.Left})
	}
	t.dirty[id] = true
}

// Drop removes id's assignment.
func (t *IDTable) Drop(id string) {
	r, ok := t.ByID[id]
	if !ok {
		return
	}
	delete(t.ByID, id)
	if t.Cur[r.Key] == id {
		delete(t.Cur, r.Key)
	}
	if !r.Left.IsZero() {
		t.NKept--
	}
	if ids := t.Kept[r.Key]; len(ids) > 0 {
		out := ids[:0]
		for _, x := range ids {
			if x != id {
				out = append(out, x)
			}
		}
		if len(out) == 0 {
			delete(t.Kept, r.Key)
		} else {
			t.Kept[r.Key] = out
		}
	}
	t.dirty[id] = true
}

func (t *IDTable) Begin() { t.now = make(map[IDKey]bool, len(t.present)) }

// Keep marks key present without claiming an id (a disabled device keeps
// its id for when it comes back).
func (t *IDTable) Keep(key IDKey) { t.now[key] = true }

// Claim returns the id of key for a device whose name asks for base. A
// Home Assistant key keeps its id whatever base (a rename by a discovery
// message changes the device's name, not its id); a Zigbee2MQTT key keeps
// it while base is unchanged, and when renamed takes base's id and keeps
// the old one reserved. A key without an id takes back one reserved for
// it, else base, or base_2, base_3, … when another key holds or keeps
// it. ok is false for an empty base, and when the running rebuild has
// claimed key already (two devices claiming one identity: the first wins).
func (t *IDTable) Claim(key IDKey, base string) (id string, ok bool) {
	if t.now[key] || base == "" {
		return "", false
	}
	t.now[key] = true
	return t.claimKey(key, base), true
}

// claimKey is claim's choice of key's id, within a rebuild or not.
func (t *IDTable) claimKey(key IDKey, base string) string {
	if id, has := t.Cur[key]; has {
		r := t.ByID[id]
		switch {
		case r.Base == base:
			return id
		case !key.followsName():
			t.log.Info("device renamed by discovery: its id stays (ids are pinned to the device)", "id", id, "key", key.String(), "name_asks", base)
			r.Base = base
			t.Put(id, r)
			return id
		}
		t.leave(id, "device renamed in Zigbee2MQTT: rules naming the old id must be changed", slog.LevelWarn)
	}
	if id, ok := t.reclaim(key, base); ok {
		return id
	}
	return t.assign(key, base)
}

// reclaim gives key back an id reserved for it: the one base asks for, or
// for a Home Assistant key (whose ids do not follow names) the latest.
func (t *IDTable) reclaim(key IDKey, base string) (string, bool) {
	best := ""
	for _, id := range t.Kept[key] {
		r := t.ByID[id]
		if r.Base == base {
			best = id
			break
		}
		if !key.followsName() && (best == "" || r.Left.After(t.ByID[best].Left)) {
			best = id
		}
	}
	if best == "" {
		return "", false
	}
	t.log.Info("device back: it gets its reserved id again", "id", best, "key", key.String())
	t.Put(best, IDRow{Key: key, Base: base})
	return best, true
}

// assign gives key the first free id of base, base_2, base_3, …; a
// suffix is logged with who holds the id.
func (t *IDTable) assign(key IDKey, base string) string {
	id := base
	for n := 2; ; n++ {
		if _, taken := t.ByID[id]; !taken && !t.Local[id] {
			break
		}
		id = base + "_" + strconv.Itoa(n)
	}
	if id != base && t.Local[base] {
		t.log.Warn("device id taken by a helper: the device gets a suffix", "wants", base, "gets", id, "key", key.String())
	} else if id != base {
		holder := t.ByID[base]
		t.log.Warn("device id taken: the newcomer gets a suffix", "wants", base, "gets", id, "key", key.String(),
			"holder", holder.Key.String(), "holder_left", !holder.Left.IsZero())
	}
	t.Put(id, IDRow{Key: key, Base: base})
	return id
}

// leave makes key's id reserved for it from now on; level is the log
// line's (an entity's segment is not logged).
func (t *IDTable) leave(id, why string, level slog.Level) {
	r := t.ByID[id]
	r.Left = t.clock()
	t.Put(id, r)
	if !strings.Contains(id, "#") {
		t.log.Log(context.Background(), level, "device id reserved for its device", "id", id, "key", r.Key.String(),
			"why", why, "until", r.Left.Add(IDReserve).Format(time.RFC3339))
	}
}

// Share makes the table keep the spec's copy of key's id (a substring of
// the spec's own strings) rather than one more string per device.
func (t *IDTable) Share(key IDKey, id string) {
	if t.Cur[key] != id {
		return
	}
	r := t.ByID[id]
	if r.Base == id {
		r.Base = id
	}
	delete(t.ByID, id)
	t.ByID[id] = r
	t.Cur[key] = id
}

// Outside a full rebuild (begin … end) a Home Assistant device claims,
// keeps and leaves its key on its own, one discovery message at a time:
// inRebuild tells the two apart, and claimAny, keepAny and leaveKey do
// what the running mode needs, with claim's rules (the id stays with its
// device, a key gets its reserved id back, a suffix never takes a
// reserved id). Reservations end as at a rebuild's end.

func (t *IDTable) InRebuild() bool { return t.now != nil }

// Taken reports whether a device holds key: claimed by the running
// rebuild, or present outside one.
func (t *IDTable) Taken(key IDKey) bool {
	if t.now != nil {
		return t.now[key]
	}
	return t.present[key]
}

// ClaimAny is claim within a rebuild; outside one, key's device (which
// holds key, or found it not taken) claims its id.
func (t *IDTable) ClaimAny(key IDKey, base string) (string, bool) {
	if t.now != nil {
		return t.Claim(key, base)
	}
	if base == "" {
		return "", false
	}
	t.present[key] = true
	t.expire()
	return t.claimKey(key, base), true
}

// KeepAny is keep within a rebuild; outside one, key stays present.
func (t *IDTable) KeepAny(key IDKey) {
	if t.now != nil {
		t.now[key] = true
		return
	}
	t.present[key] = true
}

// LeaveKey is a device leaving key outside a rebuild (its discovery
// removed): its id stays reserved for it. Within a rebuild it does
// nothing: end decides what left.
func (t *IDTable) LeaveKey(key IDKey) {
	if t.now != nil || !t.present[key] {
		return
	}
	delete(t.present, key)
	if id, ok := t.Cur[key]; ok {
		t.leave(id, "device left", slog.LevelInfo)
	}
	t.expire()
}

// End lets the keys that left since the previous rebuild (and, once a
// Zigbee2MQTT device list is known (z2mListed), every Zigbee2MQTT device
// key it no longer holds: that list is complete; once its group list is
// known (groupsListed), every group key) leave their ids, reserved for
// them; and ends the reservations past idReserve or beyond maxReserved.
func (t *IDTable) End(z2mListed, groupsListed bool) {
	for k := range t.present {
		if id, ok := t.Cur[k]; ok && !t.now[k] {
			t.leave(id, "device left", slog.LevelInfo)
		}
	}
	for k, id := range t.Cur {
		switch {
		case t.now[k] || !k.Z2M:
		case k.group() && groupsListed:
			t.leave(id, "group no longer in the Zigbee2MQTT group list", slog.LevelInfo)
		case !k.group() && z2mListed:
			t.leave(id, "device no longer in the Zigbee2MQTT device list", slog.LevelInfo)
		}
	}
	t.expire()
	t.present, t.now = t.now, nil
}

type reservation struct {
	id   string
	left time.Time
}

// expire ends reservations older than idReserve, and the newest beyond
// maxReserved (a flood of devices must not push out the established
// ones): each in constant time, since a discovery storm of devices that
// come and go ends one per message.
func (t *IDTable) expire() {
	cutoff := t.clock().Add(-IDReserve)
	for len(t.order) > 0 {
		r := t.order[0]
		if !t.reserved(r) {
			t.order = t.order[1:]
		} else if r.left.After(cutoff) {
			break
		} else {
			t.order = t.order[1:]
			t.endReservation(r.id, r.left)
		}
	}
	for t.NKept > t.Limit && len(t.order) > 0 {
		r := t.order[len(t.order)-1]
		t.order = t.order[:len(t.order)-1]
		if t.reserved(r) {
			t.endReservation(r.id, r.left)
		}
	}
	if len(t.order) > 2*t.NKept+1024 { // drop the skipped ones for good
		t.order = slices.DeleteFunc(slices.Clone(t.order), func(r reservation) bool { return !t.reserved(r) })
	}
}

// reserved reports whether r is still a reservation (not dropped, nor
// held again since).
func (t *IDTable) reserved(r reservation) bool {
	row, ok := t.ByID[r.id]
	return ok && row.Left.Equal(r.left)
}

func (t *IDTable) endReservation(id string, left time.Time) {
	k := t.ByID[id].Key
	if !strings.Contains(id, "#") {
		t.log.Info("device id reservation ended: the id is free", "id", id, "key", k.String(), "left", left.Format(time.RFC3339))
	}
	t.Drop(id)
	if _, held := t.Cur[k]; !held && len(t.Kept[k]) == 0 {
		delete(t.OwnerSeen, k)
	}
}

// sortOrder puts the queue in the order the reservations began, once
// after loading (stored rows come in any order).
func (t *IDTable) sortOrder() {
	slices.SortStableFunc(t.order, func(a, b reservation) int { return a.left.Compare(b.left) })
}

// Pending returns the unsaved changes, sorted.
func (t *IDTable) Pending() (put []IDAssignment, del []string) {
	for id := range t.dirty {
		if r, ok := t.ByID[id]; ok {
			put = append(put, IDAssignment{Key: r.Key.String(), ID: id, Base: r.Base, Left: r.Left})
		} else {
			del = append(del, id)
		}
	}
	sort.Slice(put, func(i, j int) bool { return put[i].ID < put[j].ID })
	sort.Strings(del)
	return put, del
}

// Saved forgets the changes a successful save stored.
func (t *IDTable) Saved(put []IDAssignment, del []string) {
	for _, a := range put {
		if k, ok := parseIDKey(a.Key); ok && t.ByID[a.ID] == (IDRow{Key: k, Base: a.Base, Left: a.Left}) {
			delete(t.dirty, a.ID)
		}
	}
	for _, id := range del {
		if _, ok := t.ByID[id]; !ok {
			delete(t.dirty, id)
		}
	}
}
