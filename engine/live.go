package engine

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/pilotage"
)

// Live returns the live value of an entry in the caller's scope (as
// lookup get serves it beside the entry): a state's value, a device's
// state object and availability. Automations, entries out of scope and an
// engine without devices have none.
func (e *Engine) Live(ctx context.Context, id string) (pilotage.Live, bool) {
	if e.devs == nil {
		return pilotage.Live{}, false
	}
	p := e.principal(ctx)
	en, ok := e.cat.View(p).Get(id)
	if !ok || en.Kind == pilotage.KindAutomation {
		return pilotage.Live{}, false
	}
	l, ok := e.devs.Live(id)
	if ok && en.Kind == pilotage.KindState && l.FirstValue {
		// The first value after a start: since when it has held it is what
		// since() reads (the history's, when it is the value before).
		if at, known := e.lastChanged(p, id); known {
			l.LastChanged = at
		}
	}
	return l, ok
}

// LiveKind classifies a LiveChange.
type LiveKind int

// The kinds of live changes.
const (
	LiveState        LiveKind = iota + 1 // a state's new value
	LiveEvent                            // an event's value
	LiveAvailability                     // a device's availability (Value is a bool)
	LiveCatalog                          // the catalog entry ID was added, removed or modified
)

// LiveChange is one change a LiveWatch delivers.
type LiveChange struct {
	Kind  LiveKind
	ID    string
	Value any
	Time  time.Time
}

var liveKinds = map[devices.ChangeKind]LiveKind{
	devices.ChangeState:        LiveState,
	devices.ChangeEvent:        LiveEvent,
	devices.ChangeAvailability: LiveAvailability,
	devices.ChangeCatalog:      LiveCatalog,
}

// LiveWatch is one subscriber's scoped stream of live changes (the web
// UI's server-sent events). The device catalog hands every change to C
// without waiting (a slow subscriber loses changes, counted by Dropped;
// it never blocks ingestion); the subscriber passes each through Pass,
// which judges it against the principal's catalog as it is now. Pass,
// CatalogTouched and Close belong to the one goroutine that reads C.
type LiveWatch struct {
	C <-chan LiveChange

	e       *Engine
	p       *Principal
	cancel  func()
	dropped atomic.Int64
	v       *view           // the scope as of the last look
	stale   bool            // the catalog changed since
	touched map[string]bool // catalog changes since the last CatalogTouched
	before  *view           // the scope before the first of them
}

// maxTouched bounds the catalog changes a LiveWatch remembers between two
// CatalogTouched calls.
const maxTouched = 1024

// WatchLive subscribes the caller to live changes, buffering up to
// buffer of them; ok is false when the engine has no device catalog.
func (e *Engine) WatchLive(ctx context.Context, buffer int) (w *LiveWatch, ok bool) {
	if e.devs == nil {
		return nil, false
	}
	ch := make(chan LiveChange, buffer)
	w = &LiveWatch{C: ch, e: e, p: e.principal(ctx), touched: map[string]bool{}}
	w.cancel = e.devs.Subscribe(func(c devices.Change) {
		select {
		case ch <- LiveChange{Kind: liveKinds[c.Kind], ID: c.ID, Value: c.Value, Time: c.Time}:
		default:
			w.dropped.Add(1)
		}
	})
	w.v = e.cat.View(w.p)
	return w, true
}

// Pass reports whether c is a live value the principal may see now. A
// catalog change is never passed: it is remembered for CatalogTouched.
func (w *LiveWatch) Pass(c LiveChange) bool {
	if c.Kind == LiveCatalog {
		if w.before == nil {
			w.before = w.v
		}
		w.stale = true
		if len(w.touched) < maxTouched {
			w.touched[c.ID] = true
		}
		return false
	}
	if w.stale {
		w.stale = false
		w.v = w.e.cat.View(w.p)
	}
	_, ok := w.v.Get(c.ID)
	return ok
}

// CatalogTouched reports whether a catalog change since the last call
// touched the principal's scope: its entry was visible before the first
// of those changes or is now.
func (w *LiveWatch) CatalogTouched() bool {
	if len(w.touched) == 0 {
		return false
	}
	old := w.before
	w.before, w.stale, w.v = nil, false, w.e.cat.View(w.p)
	hit := false
	for id := range w.touched {
		_, before := old.Get(id)
		_, after := w.v.Get(id)
		if before || after {
			hit = true
			break
		}
	}
	clear(w.touched)
	return hit
}

// Dropped counts the changes lost because C was full.
func (w *LiveWatch) Dropped() int64 { return w.dropped.Load() }

// Close ends the subscription.
func (w *LiveWatch) Close() { w.cancel() }
