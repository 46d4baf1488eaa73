package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/logbook"
	"github.com/pilothouse/pilothouse/storage"
)

// The logbook's records, as the engine's callers name them.
type (
	LogKind       = logbook.Kind
	LogEntry      = logbook.Entry
	LogbookConfig = logbook.Config
	LogbookStatus = logbook.Status
)

// LogKinds is the closed set of logbook entry kinds (logbook.Kinds).
var LogKinds = logbook.Kinds

// LogQuery selects logbook entries: filters, a page size and the cursor
// of the last entry already shown ("" = the newest).
type LogQuery struct {
	Kind, Device, Area, Rule string
	Cursor                   string
	Limit                    int
}

// LogPage is one page of the logbook, newest first; Next pages on ("" =
// no older entries).
type LogPage struct {
	Entries []LogEntry
	Next    string
}

// logScanPages bounds how many stored pages one Logbook call reads to
// fill a page with entries in the caller's scope.
const logScanPages = 8

// logSettleWait bounds how long reading the newest page waits for queued
// entries to be written.
const logSettleWait = 500 * time.Millisecond

// Note records a house-level logbook entry: kind "broker" or "server".
func (e *Engine) Note(kind, text string) {
	e.book.Add(storage.LogEntry{T: e.Now(), Kind: kind, Text: text})
}

// Logbook lists the logbook entries in the caller's scope, newest first.
func (e *Engine) Logbook(ctx context.Context, q LogQuery) (LogPage, error) {
	if e.book == nil {
		return LogPage{}, nil
	}
	f := storage.LogFilter{Kind: q.Kind, Device: q.Device, Area: q.Area, Rule: q.Rule, Limit: q.Limit}
	if f.Limit <= 0 || f.Limit > storage.MaxLogLimit {
		f.Limit = 50
	}
	if q.Cursor != "" {
		t, id, ok := parseLogCursor(q.Cursor)
		if !ok {
			return LogPage{}, fmt.Errorf("%w: logbook cursor %q", ErrBadCursor, q.Cursor)
		}
		f.Before, f.BeforeID = t, id
	}
	if q.Cursor == "" {
		// The newest page includes what is still queued: an entry told
		// live before the page's stream opened is on the page.
		e.book.Settle(logSettleWait)
	}
	var page LogPage
	for range logScanPages {
		list, err := e.store.ListLog(ctx, f)
		if err != nil {
			return LogPage{}, fmt.Errorf("engine: reading the logbook: %w", err)
		}
		for _, en := range list {
			le := logbook.EntryOf(en)
			if e.LogVisible(ctx, le) {
				page.Entries = append(page.Entries, le)
			}
			page.Next = le.Cursor
			if len(page.Entries) == f.Limit {
				return page, nil
			}
		}
		if len(list) < f.Limit {
			page.Next = ""
			return page, nil
		}
		last := list[len(list)-1]
		f.Before, f.BeforeID = last.T, last.ID
	}
	return page, nil // Next goes on past the rows read, none of them the caller's
}

func parseLogCursor(c string) (time.Time, int64, bool) {
	ts, ids, ok := strings.Cut(c, "-")
	t, err1 := strconv.ParseInt(ts, 10, 64)
	id, err2 := strconv.ParseInt(ids, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return time.Time{}, 0, false
	}
	return time.Unix(0, t).UTC(), id, true
}

// LogVisible reports whether the caller may see en: a device's entry when
// the device is in its scope, a firing when its run is the caller's, a
// rule's entry when the rule is visible to it, an approval when it may
// decide it or made it; house entries (broker, server) to everyone.
func (e *Engine) LogVisible(ctx context.Context, en LogEntry) bool {
	p := e.principal(ctx)
	principal, ref := en.Concerns()
	switch en.Kind {
	case "event", "availability", "helper":
		_, ok := e.cat.View(p).Get(en.Device)
		return ok
	case "firing":
		return p.OwnsRun(principal)
	case "rule":
		return e.visibleRule(p, storage.Rule{Name: en.Rule, Principal: principal, Ref: ref})
	case "approval":
		return e.approvals.MaySee(p, principal)
	}
	return true
}

// WatchLogbook subscribes to new logbook entries (a slow subscriber loses
// entries, it never blocks); pass each through LogVisible. Call the
// returned cancel when done.
func (e *Engine) WatchLogbook(buffer int) (<-chan LogEntry, func()) {
	return e.book.Watch(buffer)
}

// FlushLogbook writes every entry queued so far (tests, tools).
func (e *Engine) FlushLogbook() { e.book.Sync() }

// LogbookStatus reports the logbook writer's health.
func (e *Engine) LogbookStatus() LogbookStatus { return e.book.Status() }

// logApproval records an approval request or its decision.
func (e *Engine) logApproval(a storage.Approval, text string) {
	e.book.Add(storage.LogEntry{T: e.Now(), Kind: "approval", Rule: a.Rule, Principal: a.Principal, Ref: a.Ref,
		Status: a.Status, Text: text})
}
