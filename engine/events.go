package engine

import (
	"context"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/storage"
)

// Event is a notification for live views (the web UI's server-sent events).
type Event struct {
	Type   string    `json:"type"` // "firing", "rule", "state"
	Rule   string    `json:"rule,omitempty"`
	RunID  string    `json:"run_id,omitempty"`
	Status string    `json:"status,omitempty"`
	OK     bool      `json:"ok"`
	ID     string    `json:"id,omitempty"` // entity id for state events
	Value  any       `json:"value,omitempty"`
	Time   time.Time `json:"time"`
	Why    string    `json:"why,omitempty"` // a rule change the server made itself: why
	// Principal and Ref say whom the event concerns, for EventVisible: a
	// firing's run principal and the rule's program; a rule change's owner
	// and program as of the change.
	Principal string `json:"-"`
	Ref       string `json:"-"`
	// By is who made a rule change when not its owner (an owner removing
	// a guest's rule); "" = Principal.
	By string `json:"-"`
}

// Events subscribes (a slow subscriber loses events, it never blocks the
// engine) to engine events; call the returned cancel when done. Events are
// not scoped: pass each through EventVisible as it is delivered.
//
// A firing is announced once its run record is committed (by the recorder,
// after the batch's transaction): whatever the stream announced survives a
// crash, and a run the recorder could not write is never announced.
func (e *Engine) Events(buffer int) (<-chan Event, func()) {
	ch := make(chan Event, buffer)
	e.hubMu.Lock()
	if e.subs == nil {
		e.subs = map[chan Event]struct{}{}
	}
	e.subs[ch] = struct{}{}
	e.hubMu.Unlock()
	return ch, func() {
		e.hubMu.Lock()
		if _, ok := e.subs[ch]; ok {
			delete(e.subs, ch)
			close(ch)
		}
		e.hubMu.Unlock()
	}
}

// EventVisible reports whether the principal of ctx may be told about ev,
// judged when it is delivered (not when the stream subscribed): a firing
// only to the principal its run belongs to (the one pilotage_trace serves
// it to), a rule change only to a principal that sees the rule as it is
// now owned and programmed (its owner, or one whose scope shows its
// program). A rule that changed owner or program after a stream began is
// judged by its new owner and program.
func (e *Engine) EventVisible(ctx context.Context, ev Event) bool {
	p := e.principal(ctx)
	switch ev.Type {
	case "firing":
		return ev.Principal != "" && p.OwnsRun(ev.Principal)
	case "rule":
		return ev.Principal != "" && e.visibleRule(p, storage.Rule{Name: ev.Rule, Principal: ev.Principal, Ref: ev.Ref})
	}
	return false
}

// announceFiring tells the live stream of a firing the recorder committed.
func (e *Engine) announceFiring(run *storage.Run) {
	e.notify(Event{Type: "firing", Rule: run.Rule, RunID: run.ID, Status: run.Status, OK: run.OK, Time: run.Ended,
		Principal: run.Principal, Ref: run.Ref})
}

// notify writes ev to the logbook (logEvent) and offers it to every
// subscriber.
func (e *Engine) notify(ev Event) {
	e.logEvent(ev)
	e.hubMu.Lock()
	defer e.hubMu.Unlock()
	for ch := range e.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

// logEvent records a firing or a rule change announced on the event hub.
func (e *Engine) logEvent(ev Event) {
	en := storage.LogEntry{T: ev.Time, Rule: ev.Rule, Run: ev.RunID, Status: ev.Status, Principal: ev.Principal, Ref: ev.Ref}
	switch ev.Type {
	case "firing":
		en.Kind, en.Text = "firing", ev.Rule+" fired: "+strings.ReplaceAll(ev.Status, "_", " ")
	case "rule":
		en.Kind, en.Text = "rule", "rule "+ev.Rule+" "+ev.Status
		switch {
		case ev.By != "" && ev.By != ev.Principal:
			en.Text += " (by " + ev.By + ", a rule of " + ev.Principal + ")"
		case ev.Principal != "":
			en.Text += " (by " + ev.Principal + ")"
		}
		if ev.Why != "" {
			en.Text += ": " + ev.Why
		}
	default:
		return
	}
	e.book.Add(en)
}
