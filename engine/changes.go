package engine

import (
	"context"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/history"
)

// When states last changed, for since() and last_changed(). The catalog
// knows every change it saw; across a restart the first value it sees of
// a state may be the one it held before, and then the state history says
// since when: the change time is the oldest of the latest stored changes
// that all carry the current value (the history stores a row for the
// first value after each start too), as its kept last change says, else
// as the raw rows say (databases from before it was kept). With the history off, a state's
// first value after a start counts as changed at that start.

// changeLookback bounds the stored changes read to settle one state.
const changeLookback = 64

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
	// The kept last change first: the raw rows before it may be gone to
	// the history's bound (a chattier entity pushes them out).
	if last, since, ok, err := e.store.HistorySince(ctx, id); err != nil {
		e.log.Warn("reading the last change for since()", "id", id, "err", err)
	} else if ok && !since.After(seen) && history.Same(history.Value(last), value) {
		return since, true
	}
	rows, err := e.store.HistoryLatest(ctx, id, seen, changeLookback)
	if err != nil {
		e.log.Warn("reading the state history for since()", "id", id, "err", err)
		return time.Time{}, false
	}
	var at time.Time
	for _, r := range rows {
		if !history.Same(history.Value(r), value) {
			break
		}
		at = r.T
	}
	return at, !at.IsZero()
}
