package catalog

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine/internal/access"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// Service merges device entries with promoted automations and serves
// them within each principal's scope: listings, versions, changed_since.
type Service struct {
	devs *devices.Catalog // nil: no devices

	mu        sync.Mutex
	autos     map[string]automation // by entry id (= program_ref)
	autoOrder []string              // ids in the order they were added; autoGen = len
	autoGen   uint64
	// boundOn: program ref → installed rule name → the entries that rule
	// was bound to (rules with catalog-reference params only); boundRef:
	// rule name → its ref there. bindGen counts their changes: a view
	// built at another one is rebuilt.
	boundOn  map[string]map[string][]string
	boundRef map[string]string
	bindGen  uint64
	views    map[string]*View            // principal name → latest view
	history  map[string]map[string]*View // principal name → version → view
	order    map[string][]string         // principal name → versions, oldest first
	// pinned keeps the targets of changed_since pages still being read
	// (a moving catalog would push them out of history), a few per
	// principal, oldest first.
	pinned map[string][]*View
}

// automation is one promoted program as a catalog entry.
type automation struct {
	entry *pilotage.Entry
	hash  string
	// reach is every catalog id other than an automation that the body
	// references, directly or through the automations it calls, sorted:
	// who may see the automation (and its rules) is decided from it. It is
	// computed once, when the program is registered; a program_ref is
	// immutable, and so is everything it calls (by program_ref), so the set
	// never changes: a re-promoted callee is a new ref its old callers do
	// not reach. It shares the body's Refs when the body calls no
	// automation.
	reach []string
	// opaque: a called automation is not registered (its stored program
	// no longer compiles), so reach is incomplete.
	opaque bool
}

const maxHistory = 8

// New makes the catalog service of the device catalog devs (nil: none).
func New(devs *devices.Catalog) *Service {
	return &Service{
		devs:     devs,
		autos:    map[string]automation{},
		boundOn:  map[string]map[string][]string{},
		boundRef: map[string]string{},
		views:    map[string]*View{},
		history:  map[string]map[string]*View{},
		order:    map[string][]string{},
		pinned:   map[string][]*View{},
	}
}

// AddAutomation registers a promoted program's entry; body is its
// compiled program (only its references are read).
func (c *Service) AddAutomation(entry *pilotage.Entry, body *rules.Compiled) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.autos[entry.ID]; ok {
		return
	}
	hash := entry.ContentHash()
	if hash == entry.Revision {
		hash = entry.Revision // one copy
	}
	reach, opaque := c.reach(body)
	c.autos[entry.ID] = automation{entry: entry, hash: hash, reach: reach, opaque: opaque}
	c.autoOrder = append(c.autoOrder, entry.ID)
	c.autoGen++
}

// reach computes an automation's transitive references from its body's
// and its callees' (registered before it: a callee is promoted first);
// c.mu is held.
func (c *Service) reach(body *rules.Compiled) ([]string, bool) {
	isAuto := func(i int) bool {
		if _, ok := c.autos[body.Refs[i]]; ok {
			return true
		}
		return i < len(body.Entries) && body.Entries[i] != nil && body.Entries[i].Kind == pilotage.KindAutomation
	}
	calls := false
	for i := range body.Refs {
		calls = calls || isAuto(i)
	}
	if !calls {
		return body.Refs, false
	}
	set, opaque := map[string]struct{}{}, false
	for i, id := range body.Refs {
		if !isAuto(i) {
			set[id] = struct{}{}
			continue
		}
		callee, ok := c.autos[id]
		if !ok {
			opaque = true
			continue
		}
		opaque = opaque || callee.opaque
		for _, r := range callee.reach {
			set[r] = struct{}{}
		}
	}
	reach := make([]string, 0, len(set))
	for r := range set {
		reach = append(reach, r)
	}
	sort.Strings(reach)
	return reach, opaque
}

// AutomationIDs is the registered automations' ids, in the order they
// were added (never changed in place).
func (c *Service) AutomationIDs() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.autoOrder
}

// maxPinned bounds the changed_since targets kept per principal.
const maxPinned = 4

// ChangedSince serves one page of changes from the baseline version base:
// up to limit in id order, toward the current version cur, or, with a
// cursor, toward the version the first page named. It returns the page's
// target version and the cursor of the next page ("" when none follows).
func (c *Service) ChangedSince(p *access.Principal, cur *View, base, cursor string, limit int) ([]Change, string, string, error) {
	key := p.ScopeKey()
	target, after := cur, ""
	c.mu.Lock()
	old := c.history[key][base]
	if cursor != "" {
		b, tv, a, err := decodeChangesCursor(cursor)
		if err != nil || b != base {
			c.mu.Unlock()
			return nil, "", "", &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: "cursor is not one this server returned for that catalog_version", CatalogVersion: cur.version}
		}
		target, after = c.versionOf(key, tv), a
	}
	c.mu.Unlock()
	if old == nil || target == nil {
		return nil, "", "", &pilotage.RequestError{Kind: pilotage.ErrUnknownBaseline, Message: "cannot compute changes from that catalog_version; list the catalog again", CatalogVersion: cur.version}
	}
	changes, more := diffViews(old, target, after, limit)
	next := ""
	if more {
		next = encodeChangesCursor(base, target.version, changes[len(changes)-1].ID)
		c.pin(key, target)
	}
	return changes, target.version, next, nil
}

// Change is one changed_since row.
type Change struct {
	ID     string `json:"id"`
	Change string `json:"change"`
}

// versionOf finds a view of p's by version: in history or pinned; c.mu
// is held.
func (c *Service) versionOf(key, version string) *View {
	if v := c.history[key][version]; v != nil {
		return v
	}
	for _, v := range c.pinned[key] {
		if v.version == version {
			return v
		}
	}
	return nil
}

func (c *Service) pin(key string, v *View) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := c.pinned[key]
	for _, x := range ps {
		if x == v {
			return
		}
	}
	if len(ps) == maxPinned {
		ps = ps[1:]
	}
	c.pinned[key] = append(ps, v)
}

// diffViews walks both views' ids after "after" in order and returns the
// first limit changes, and whether more follow.
func diffViews(old, cur *View, after string, limit int) ([]Change, bool) {
	curIDs, _ := cur.Flat()
	oldIDs, _ := old.Flat()
	i, j := idsAfter(curIDs, after), idsAfter(oldIDs, after)
	out := []Change{}
	for i < len(curIDs) || j < len(oldIDs) {
		var ch Change
		switch {
		case j == len(oldIDs) || (i < len(curIDs) && curIDs[i] < oldIDs[j]):
			ch = Change{curIDs[i], "added"}
			i++
		case i == len(curIDs) || oldIDs[j] < curIDs[i]:
			ch = Change{oldIDs[j], "removed"}
			j++
		default:
			id := curIDs[i]
			i, j = i+1, j+1
			oh, _ := old.Hash(id)
			if ch2, _ := cur.Hash(id); oh == ch2 {
				continue
			}
			ch = Change{id, "modified"}
		}
		if len(out) == limit {
			return out, true
		}
		out = append(out, ch)
	}
	return out, false
}

func idsAfter(ids []string, after string) int {
	if after == "" {
		return 0
	}
	k := sort.SearchStrings(ids, after)
	if k < len(ids) && ids[k] == after {
		k++
	}
	return k
}

func encodeChangesCursor(base, target, after string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("c:" + base + "\x00" + target + "\x00" + after))
}

func decodeChangesCursor(c string) (base, target, after string, err error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	parts := strings.SplitN(strings.TrimPrefix(string(b), "c:"), "\x00", 3)
	if err != nil || !strings.HasPrefix(string(b), "c:") || len(parts) != 3 {
		return "", "", "", fmt.Errorf("bad cursor")
	}
	return parts[0], parts[1], parts[2], nil
}

// SearchText is what a list's q searches in an entry: its id, name,
// description and tags, lowercased.
func SearchText(en *pilotage.Entry) string {
	return strings.ToLower(en.ID + "\x00" + en.Name + "\x00" + en.Description + "\x00" + strings.Join(en.Tags, "\x00"))
}
