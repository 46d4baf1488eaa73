package engine

import "time"

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
}

// Events subscribes (a slow subscriber loses events, it never blocks the
// engine) to engine events; call the returned cancel when done.
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

func (e *Engine) notify(ev Event) {
	e.hubMu.Lock()
	defer e.hubMu.Unlock()
	for ch := range e.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}
