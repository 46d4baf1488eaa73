package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// catalogService merges device entries with promoted automations and serves
// them within each principal's scope: listings, versions, changed_since.
type catalogService struct {
	e *Engine

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
	views    map[string]*view            // principal name → latest view
	history  map[string]map[string]*view // principal name → version → view
	order    map[string][]string         // principal name → versions, oldest first
	// pinned keeps the targets of changed_since pages still being read
	// (a moving catalog would push them out of history), a few per
	// principal, oldest first.
	pinned map[string][]*view
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

func newCatalogService(e *Engine) *catalogService {
	return &catalogService{
		e:        e,
		autos:    map[string]automation{},
		boundOn:  map[string]map[string][]string{},
		boundRef: map[string]string{},
		views:    map[string]*view{},
		history:  map[string]map[string]*view{},
		order:    map[string][]string{},
		pinned:   map[string][]*view{},
	}
}

// addAutomation registers a promoted program's entry; body is its
// compiled program (only its references are read).
func (c *catalogService) addAutomation(entry *pilotage.Entry, body *rules.Compiled) {
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
func (c *catalogService) reach(body *rules.Compiled) ([]string, bool) {
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

func (c *catalogService) devSnapshot() *devices.Snapshot {
	if c.e.devs == nil {
		return nil
	}
	return c.e.devs.Snapshot()
}

// view returns p's current view, building it when the catalog moved.
func (c *catalogService) view(p *Principal) *view {
	snap := c.devSnapshot()
	var devGen uint64
	if snap != nil {
		devGen = snap.Gen
	}
	key := p.scopeKey()
	c.mu.Lock()
	defer c.mu.Unlock()
	if v := c.views[key]; v != nil && v.devGen == devGen && v.autoGen == c.autoGen && v.bindGen == c.bindGen {
		return v
	}
	var v *view
	if old := c.views[key]; old != nil && old.devGen == devGen && old.autoGen < c.autoGen && old.bindGen == c.bindGen {
		v = c.extend(p, old, snap) // only automations were added: no full rebuild
	} else {
		v = c.build(p, snap, devGen)
	}
	c.views[key] = v
	h := c.history[key]
	if h == nil {
		h = map[string]*view{}
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

// LookupRequest is the pilotage_lookup arguments.
type LookupRequest struct {
	Verb           string `json:"verb"`
	Kind           string `json:"kind,omitempty"`
	Tag            string `json:"tag,omitempty"`
	Q              string `json:"q,omitempty"`
	Cursor         string `json:"cursor,omitempty"`
	Limit          int    `json:"limit,omitempty"`
	ID             string `json:"id,omitempty"`
	CatalogVersion string `json:"catalog_version,omitempty"`
	// History (get of a state entry) asks for its recorded changes too.
	History *HistoryArg `json:"history,omitempty"`
}

// ListResponse is the list verb's result.
type ListResponse struct {
	Items          []*pilotage.Entry `json:"items"`
	NextCursor     string            `json:"next_cursor,omitempty"`
	CatalogVersion string            `json:"catalog_version"`
}

// GetResponse is the get verb's result; live values ride beside the entry.
type GetResponse struct {
	Entry          *pilotage.Entry `json:"entry"`
	Live           *pilotage.Live  `json:"live,omitempty"`
	CatalogVersion string          `json:"catalog_version"`
	History        *LookupHistory  `json:"history,omitempty"`
}

// Change is one changed_since row.
type Change struct {
	ID     string `json:"id"`
	Change string `json:"change"`
}

// ChangedResponse is the changed_since verb's result: one page of the
// changes (sorted by id) from the baseline to CatalogVersion; NextCursor,
// passed back with the same baseline, continues toward that same version.
type ChangedResponse struct {
	CatalogVersion string   `json:"catalog_version"`
	Changes        []Change `json:"changes"`
	NextCursor     string   `json:"next_cursor,omitempty"`
}

// Lookup limits.
const (
	DefaultListLimit = 50
	MaxListLimit     = 500
)

// Lookup serves pilotage_lookup within the caller's scope.
func (e *Engine) Lookup(ctx context.Context, req LookupRequest) (any, error) {
	p := e.principal(ctx)
	v := e.cat.view(p)
	switch req.Verb {
	case "list":
		return v.list(req, e.reportsAvailability)
	case "get":
		if req.ID == "" {
			return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: "get needs id", CatalogVersion: v.version}
		}
		en, ok := v.Get(req.ID)
		if !ok {
			en, ok = e.currentAutomation(v, req.ID)
		}
		if !ok {
			return nil, &pilotage.RequestError{Kind: pilotage.ErrNotFound, Message: "no catalog entry with id " + quote(req.ID), CatalogVersion: v.version}
		}
		resp := &GetResponse{Entry: en, CatalogVersion: v.version}
		if e.devs != nil && en.Kind != pilotage.KindAutomation {
			if l, ok := e.devs.Live(req.ID); ok {
				resp.Live = &l
			}
		}
		if req.History != nil {
			h, err := e.lookupHistory(ctx, v, en, req.History)
			if err != nil {
				return nil, err
			}
			resp.History = h
		}
		return resp, nil
	case "changed_since":
		if req.CatalogVersion == "" {
			return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: "changed_since needs catalog_version", CatalogVersion: v.version}
		}
		return e.cat.changedSince(p, v, req)
	case "":
		return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: "verb is required: list, get or changed_since", CatalogVersion: v.version}
	default:
		return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: "unknown verb " + quote(req.Verb) + ": want list, get or changed_since", CatalogVersion: v.version}
	}
}

// list serves the list verb; reports says whether an entry's device
// reports its availability (what the query words availability, offline
// … find).
func (v *view) list(req LookupRequest, reports func(id string) bool) (*ListResponse, error) {
	limit := req.Limit
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 0 || limit > MaxListLimit:
		return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: fmt.Sprintf("limit must be 1..%d", MaxListLimit), CatalogVersion: v.version}
	}
	ids, entries := v.flat()
	start := 0
	if req.Cursor != "" {
		after, err := decodeCursor(req.Cursor)
		if err != nil {
			return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: "cursor is not one this server returned", CatalogVersion: v.version}
		}
		start = sort.SearchStrings(ids, after)
		if start < len(ids) && ids[start] == after {
			start++
		}
	}
	q := strings.ToLower(strings.TrimSpace(req.Q))
	var texts []string
	if q != "" {
		texts = v.searchTexts()
	}
	resp := &ListResponse{Items: []*pilotage.Entry{}, CatalogVersion: v.version}
	for i := start; i < len(entries); i++ {
		en := entries[i]
		if req.Kind != "" && string(en.Kind) != req.Kind {
			continue
		}
		if req.Tag != "" && !hasTag(en.Tags, req.Tag) {
			continue
		}
		if q != "" && !matchesQuery(texts[i], q, func() bool { return reports(en.ID) }) {
			continue
		}
		if len(resp.Items) == limit {
			resp.NextCursor = encodeCursor(resp.Items[len(resp.Items)-1].ID)
			break
		}
		resp.Items = append(resp.Items, en)
	}
	return resp, nil
}

func searchText(en *pilotage.Entry) string {
	return strings.ToLower(en.ID + "\x00" + en.Name + "\x00" + en.Description + "\x00" + strings.Join(en.Tags, "\x00"))
}

// matchesQuery reports whether every word of q occurs in the entry's
// text; a word about availability matches an entry whose device reports
// it (reports), so "offline" finds what an available trigger can watch.
func matchesQuery(text, q string, reports func() bool) bool {
	for _, w := range strings.Fields(q) {
		if !strings.Contains(text, w) && (!availabilityWords[w] || !reports()) {
			return false
		}
	}
	return true
}

var availabilityWords = map[string]bool{"availability": true, "available": true, "unavailable": true,
	"offline": true, "online": true, "unreachable": true, "reachable": true}

// reportsAvailability says whether id's device reports its availability.
func (e *Engine) reportsAvailability(id string) bool {
	if e.devs == nil {
		return false
	}
	l, ok := e.devs.Live(id)
	return ok && l.Available != nil
}

func encodeCursor(after string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("a:" + after))
}

func decodeCursor(c string) (string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(b), "a:") {
		return "", fmt.Errorf("bad cursor")
	}
	return string(b[2:]), nil
}

// maxPinned bounds the changed_since targets kept per principal.
const maxPinned = 4

// changedSince serves one page of changes from the baseline: up to limit
// (default and most MaxListLimit) in id order, toward the current version,
// or, with a cursor, toward the version the first page named.
func (c *catalogService) changedSince(p *Principal, cur *view, req LookupRequest) (*ChangedResponse, error) {
	limit := req.Limit
	switch {
	case limit == 0:
		limit = MaxListLimit
	case limit < 0 || limit > MaxListLimit:
		return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: fmt.Sprintf("limit must be 1..%d", MaxListLimit), CatalogVersion: cur.version}
	}
	key := p.scopeKey()
	target, after := cur, ""
	c.mu.Lock()
	old := c.history[key][req.CatalogVersion]
	if req.Cursor != "" {
		base, tv, a, err := decodeChangesCursor(req.Cursor)
		if err != nil || base != req.CatalogVersion {
			c.mu.Unlock()
			return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: "cursor is not one this server returned for that catalog_version", CatalogVersion: cur.version}
		}
		target, after = c.versionOf(key, tv), a
	}
	c.mu.Unlock()
	if old == nil || target == nil {
		return nil, &pilotage.RequestError{Kind: pilotage.ErrUnknownBaseline, Message: "cannot compute changes from that catalog_version; list the catalog again", CatalogVersion: cur.version}
	}
	changes, more := diffViews(old, target, after, limit)
	resp := &ChangedResponse{CatalogVersion: target.version, Changes: changes}
	if more {
		resp.NextCursor = encodeChangesCursor(req.CatalogVersion, target.version, changes[len(changes)-1].ID)
		c.pin(key, target)
	}
	return resp, nil
}

// versionOf finds a view of p's by version: in history or pinned; c.mu
// is held.
func (c *catalogService) versionOf(key, version string) *view {
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

func (c *catalogService) pin(key string, v *view) {
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
func diffViews(old, cur *view, after string, limit int) ([]Change, bool) {
	curIDs, _ := cur.flat()
	oldIDs, _ := old.flat()
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
			oh, _ := old.hash(id)
			if ch2, _ := cur.hash(id); oh == ch2 {
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

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
