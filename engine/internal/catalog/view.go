// Package catalog owns the scoped catalog: device entries and promoted
// automations merged into each principal's immutable, versioned view, and
// the changes between versions.
package catalog

import (
	"fmt"
	"sort"
	"sync"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine/internal/access"
	"github.com/pilothouse/pilothouse/pilotage"
)

// A principal's view: found (Service.View, the lookup every firing and
// every call of a firing makes), read (Get), and built or extended when
// the catalog moved.

// View is one principal's immutable snapshot of the catalog. A view is
// either flat (base == nil: own holds every entry, and snap, when set,
// holds every device entry: a principal who sees all of them) or a layer
// over a flat base holding the automations promoted since, so promoting a
// rule costs O(promoted since the last flattening), not O(catalog).
type View struct {
	devGen, autoGen uint64
	bindGen         uint64 // Service.bindGen it was built at
	base            *View
	snap            *devices.Snapshot // all of its entries are in the view (its ContentSum is in sum)
	own             map[string]viewEntry
	n               int
	sum             [2]uint64 // order-independent sum of H(id, hash): the version is content-determined
	version         string

	flatOnce sync.Once
	ids      []string
	entries  []*pilotage.Entry

	searchOnce sync.Once
	search     []string // lowercased id, name, description and tags per entry, built on the first q

	sel selectMemo // what selectors resolved to in it (selector.go)
}

// viewEntry is one entry of a view with its content hash (one map, not
// two: a flat view holds every entry of the catalog).
type viewEntry struct {
	e    *pilotage.Entry
	hash string
}

// flattenAt bounds a layer: beyond it the next promotion flattens.
const flattenAt = 256

func newView(devGen, autoGen uint64, base *View) *View {
	return newViewSized(devGen, autoGen, base, 0)
}

// newViewSized makes a view for about n entries of its own.
func newViewSized(devGen, autoGen uint64, base *View, n int) *View {
	v := &View{devGen: devGen, autoGen: autoGen, base: base, own: make(map[string]viewEntry, n)}
	if base != nil {
		v.n, v.sum = base.n, base.sum
	}
	return v
}

func (v *View) add(id string, e *pilotage.Entry, hash string) {
	if _, dup := v.Hash(id); dup {
		return
	}
	v.own[id] = viewEntry{e, hash}
	v.n++
	d := devices.EntrySum(id, hash)
	v.sum[0] += d[0]
	v.sum[1] += d[1]
}

func (v *View) seal() *View {
	v.version = fmt.Sprintf("cv1-%016x%016x", v.sum[0], v.sum[1])
	return v
}

// View returns p's current view, building it when the catalog moved.
func (c *Service) View(p *access.Principal) *View {
	snap := c.DevSnapshot()
	var devGen uint64
	if snap != nil {
		devGen = snap.Gen
	}
	key := p.ScopeKey()
	c.mu.Lock()
	defer c.mu.Unlock()
	if v := c.views[key]; v != nil && v.devGen == devGen && v.autoGen == c.autoGen && v.bindGen == c.bindGen {
		return v
	}
	var v *View
	if old := c.views[key]; old != nil && old.devGen == devGen && old.autoGen < c.autoGen && old.bindGen == c.bindGen {
		v = c.extend(p, old, snap) // only automations were added: no full rebuild
	} else {
		v = c.build(p, snap, devGen)
	}
	c.views[key] = v
	h := c.history[key]
	if h == nil {
		h = map[string]*View{}
		c.history[key] = h
	}
	if _, seen := h[v.version]; !seen {
		h[v.version] = v
		c.order[key] = append(c.order[key], v.version)
		if len(c.order[key]) > maxHistory {
			delete(h, c.order[key][0])
			c.order[key] = c.order[key][1:]
		}
	}
	return v
}

// DevSnapshot is the device catalog's snapshot (nil without devices).
func (c *Service) DevSnapshot() *devices.Snapshot {
	if c.devs == nil {
		return nil
	}
	return c.devs.Snapshot()
}

// Get implements rules.Catalog.
func (v *View) Get(id string) (*pilotage.Entry, bool) {
	if ve, ok := v.own[id]; ok {
		return ve.e, true
	}
	if v.snap != nil {
		if e, ok := v.snap.Get(id); ok {
			return e, true
		}
	}
	if v.base != nil {
		return v.base.Get(id)
	}
	return nil, false
}

func (v *View) Hash(id string) (string, bool) {
	if ve, ok := v.own[id]; ok {
		return ve.hash, true
	}
	if v.snap != nil {
		if e, ok := v.snap.Get(id); ok {
			return e.Revision, true
		}
	}
	if v.base != nil {
		return v.base.Hash(id)
	}
	return "", false
}

// IDs implements rules.Catalog.
func (v *View) IDs() []string { ids, _ := v.Flat(); return ids }

// Version implements rules.Catalog.
func (v *View) Version() string { return v.version }

// DevGen is the device catalog generation the view was built at.
func (v *View) DevGen() uint64 { return v.devGen }

// Flat returns every id, sorted, and the entries in that order (built once).
func (v *View) Flat() ([]string, []*pilotage.Entry) {
	v.flatOnce.Do(func() {
		own := make([]string, 0, len(v.own))
		for id := range v.own {
			own = append(own, id)
		}
		sort.Strings(own)
		var baseIDs []string
		switch {
		case v.base != nil:
			baseIDs, _ = v.base.Flat()
		case v.snap != nil:
			ents := v.snap.Entries()
			baseIDs = make([]string, len(ents))
			for i, e := range ents {
				baseIDs[i] = e.ID
			}
		}
		v.ids = make([]string, 0, len(own)+len(baseIDs))
		i, j := 0, 0
		for i < len(baseIDs) || j < len(own) {
			if j == len(own) || (i < len(baseIDs) && baseIDs[i] < own[j]) {
				v.ids = append(v.ids, baseIDs[i])
				i++
			} else {
				v.ids = append(v.ids, own[j])
				j++
			}
		}
		v.entries = make([]*pilotage.Entry, len(v.ids))
		for k, id := range v.ids {
			v.entries[k], _ = v.Get(id)
		}
	})
	return v.ids, v.entries
}

// SearchTexts returns the per-entry search text, built once per view.
func (v *View) SearchTexts() []string {
	v.searchOnce.Do(func() {
		_, entries := v.Flat()
		v.search = make([]string, len(entries))
		for i, en := range entries {
			v.search[i] = SearchText(en)
		}
	})
	return v.search
}

// flatten materializes a layered view into a flat one with the same content.
func (v *View) flatten() *View {
	if v.base == nil {
		return v
	}
	ids, entries := v.Flat()
	f := newViewSized(v.devGen, v.autoGen, nil, len(ids))
	f.bindGen = v.bindGen
	for i, id := range ids {
		h, _ := v.Hash(id)
		f.own[id] = viewEntry{entries[i], h}
	}
	f.n, f.sum, f.version = v.n, v.sum, v.version
	return f
}

// build computes a flat view; c.mu is held. A principal who sees every
// device entry gets the snapshot itself (nothing to visit: its version
// comes from the snapshot's content sum).
func (c *Service) build(p *access.Principal, snap *devices.Snapshot, devGen uint64) *View {
	v := newView(devGen, c.autoGen, nil)
	v.bindGen = c.bindGen
	if snap != nil && p.Unrestricted() {
		v.snap, v.n, v.sum = snap, snap.Len(), snap.ContentSum()
	} else if snap != nil {
		for _, en := range snap.Entries() {
			var devTags []string
			if en.Kind != pilotage.KindDevice {
				if d, ok := snap.Get(access.DeviceOf(en.ID)); ok {
					devTags = d.Tags
				}
			}
			if p.Visible(en, devTags) {
				v.add(en.ID, en, snap.Hash(en.ID))
			}
		}
	}
	for _, id := range c.autoOrder {
		c.addVisibleAuto(p, v, snap, id)
	}
	return v.seal()
}

// extend derives a view from old by adding the automations promoted since;
// c.mu is held.
func (c *Service) extend(p *access.Principal, old *View, snap *devices.Snapshot) *View {
	base := old
	var carry map[string]viewEntry
	if old.base != nil {
		if len(old.own) >= flattenAt {
			base = old.flatten()
		} else {
			base, carry = old.base, old.own
		}
	}
	v := newView(old.devGen, c.autoGen, base)
	v.bindGen = old.bindGen
	for id, ve := range carry {
		v.add(id, ve.e, ve.hash)
	}
	for _, id := range c.autoOrder[old.autoGen:] {
		c.addVisibleAuto(p, v, snap, id)
	}
	return v.seal()
}

// addVisibleAuto adds automation id to v when p may see it: when every
// entry it reaches, directly or through the automations it calls, is one p
// sees. An entry that exists but is invisible to p hides it; so does one
// that is not in the catalog now unless p could see it by its id alone
// (for an all-seeing principal a vanished reference keeps the automation
// visible: its use is then promotion_drift, not not_found).
// An automation an installed rule is bound on is hidden, like the rule,
// from whoever cannot see an entry the rule was bound to (see bound.go).
func (c *Service) addVisibleAuto(p *access.Principal, v *View, snap *devices.Snapshot, id string) {
	a := c.autos[id]
	if !p.Visible(a.entry, nil) || (a.opaque && !p.Unrestricted()) || !SeesAll(p, v, snap, a.reach) {
		return
	}
	if !p.Unrestricted() {
		for _, ids := range c.boundOn[id] {
			if !SeesAll(p, v, snap, ids) {
				return
			}
		}
	}
	v.add(id, a.entry, a.hash)
}

// SeesAll reports whether p sees every one of ids in v, or could see
// those absent from the catalog by their id alone.
func SeesAll(p *access.Principal, v *View, snap *devices.Snapshot, ids []string) bool {
	for _, r := range ids {
		if _, vis := v.Get(r); vis {
			continue
		}
		if snap != nil {
			if _, exists := snap.Get(r); exists {
				return false
			}
		}
		if !p.VisibleAbsent(r) {
			return false
		}
	}
	return true
}
