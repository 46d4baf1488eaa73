package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/pilothouse/pilothouse/engine/internal/access"
	"github.com/pilothouse/pilothouse/engine/internal/catalog"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
)

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

// The catalog's view of one principal, and one changed_since row.
type (
	view   = catalog.View
	Change = catalog.Change
)

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
	v := e.cat.View(p)
	switch req.Verb {
	case "list":
		return listView(v, req, e.reportsAvailability)
	case "get":
		if req.ID == "" {
			return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: "get needs id", CatalogVersion: v.Version()}
		}
		en, ok := v.Get(req.ID)
		if !ok {
			en, ok = e.currentAutomation(v, req.ID)
		}
		if !ok {
			return nil, &pilotage.RequestError{Kind: pilotage.ErrNotFound, Message: "no catalog entry with id " + shown.Quote(req.ID), CatalogVersion: v.Version()}
		}
		resp := &GetResponse{Entry: en, CatalogVersion: v.Version()}
		if e.devs != nil && en.Kind != pilotage.KindAutomation {
			if l, ok := e.Live(ctx, req.ID); ok { // a first value's last change settled, as since() reads it
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
			return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: "changed_since needs catalog_version", CatalogVersion: v.Version()}
		}
		return e.changedSince(p, v, req)
	case "":
		return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: "verb is required: list, get or changed_since", CatalogVersion: v.Version()}
	default:
		return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: "unknown verb " + shown.Quote(req.Verb) + ": want list, get or changed_since", CatalogVersion: v.Version()}
	}
}

// list serves the list verb; reports says whether an entry's device
// reports its availability (what the query words availability, offline
// … find).
func listView(v *view, req LookupRequest, reports func(id string) bool) (*ListResponse, error) {
	limit := req.Limit
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 0 || limit > MaxListLimit:
		return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: fmt.Sprintf("limit must be 1..%d", MaxListLimit), CatalogVersion: v.Version()}
	}
	ids, entries := v.Flat()
	start := 0
	if req.Cursor != "" {
		after, err := decodeCursor(req.Cursor)
		if err != nil {
			return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: "cursor is not one this server returned", CatalogVersion: v.Version()}
		}
		start = sort.SearchStrings(ids, after)
		if start < len(ids) && ids[start] == after {
			start++
		}
	}
	q := strings.ToLower(strings.TrimSpace(req.Q))
	var texts []string
	if q != "" {
		texts = v.SearchTexts()
	}
	resp := &ListResponse{Items: []*pilotage.Entry{}, CatalogVersion: v.Version()}
	for i := start; i < len(entries); i++ {
		en := entries[i]
		if req.Kind != "" && string(en.Kind) != req.Kind {
			continue
		}
		if req.Tag != "" && !access.HasTag(en.Tags, req.Tag) {
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

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// changedSince serves one page of changes from the baseline: up to limit
// (default and most MaxListLimit) in id order, toward the current version,
// or, with a cursor, toward the version the first page named.
func (e *Engine) changedSince(p *Principal, cur *view, req LookupRequest) (*ChangedResponse, error) {
	limit := req.Limit
	switch {
	case limit == 0:
		limit = MaxListLimit
	case limit < 0 || limit > MaxListLimit:
		return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: fmt.Sprintf("limit must be 1..%d", MaxListLimit), CatalogVersion: cur.Version()}
	}
	changes, target, next, err := e.cat.ChangedSince(p, cur, req.CatalogVersion, req.Cursor, limit)
	if err != nil {
		return nil, err
	}
	return &ChangedResponse{CatalogVersion: target, Changes: changes, NextCursor: next}, nil
}
