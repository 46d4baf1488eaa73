package engine

import (
	"context"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/history"
)

// When states last changed, for since() and last_changed(). The catalog
// knows every change it saw; across a restart the first value it sees of
// a state may be the one it held before, and then the state history's
// kept last change says since when (the history writes only changes, so
// a value seen again at a start is not one). With the history off, a
// state's first value after a start counts as changed at that start.

// lastChanged is when state (or event) id last changed, for p.
func (e *Engine) lastChanged(p *Principal, id string) (time.Time, bool) {
	if e.devs == nil {
		return time.Time{}, false
	}
	if _, ok := e.cat.View(p).Get(id); !ok {
		return time.Time{}, false
	}
	l, ok := e.devs.Live(id)
	if !ok || l.LastChanged.IsZero() {
		return time.Time{}, false
	}
	if !l.FirstValue {
		return l.LastChanged, true
	}
	at := l.LastChanged
	if stored, ok := e.storedChange(id, l.Value, l.LastChanged); ok {
		at = stored
	}
	e.devs.RestoreChanged(id, l.Value, at)
	if l, ok = e.devs.Live(id); !ok || l.LastChanged.IsZero() {
		return time.Time{}, false
	}
	return l.LastChanged, true
}

// storedChange reads from the state history since when id has held value
// (as of seen, when this process first saw it).
func (e *Engine) storedChange(id string, value any, seen time.Time) (time.Time, bool) {
	if e.hist == nil {
		return time.Time{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// The kept last change: the raw rows before it may be gone to the
	// history's bound (a chattier entity pushes them out).
	last, since, ok, err := e.store.HistorySince(ctx, id)
	if err != nil {
		e.log.Warn("reading the last change for since()", "id", id, "err", err)
		return time.Time{}, false
	}
	return since, ok && !since.After(seen) && history.Same(history.Value(last), value)
}
