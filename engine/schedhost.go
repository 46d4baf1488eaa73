package engine

import (
	"context"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/promoted"
	"github.com/pilothouse/pilothouse/engine/internal/sched"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// schedHost is the engine as its scheduler sees it (sched.Host): a
// conversion of the same pointer, so none of the engine's exported API
// grows for it.
type schedHost Engine

func (h *schedHost) engine() *Engine { return (*Engine)(h) }

func (h *schedHost) Body(ref string) *promoted.Body { return h.engine().body(ref) }

func (h *schedHost) Rebind(r storage.Rule, c *rules.Compiled, params map[string]any) (*rules.Compiled, error) {
	return h.engine().rebind(r, c, params)
}

func (h *schedHost) Principal(name string) *Principal { return h.engine().principalByName(name) }

func (h *schedHost) LastChanged(p *Principal, id string) (time.Time, bool) {
	return h.engine().lastChanged(p, id)
}

func (h *schedHost) Disable(ctx context.Context, r *sched.Rule, why string) error {
	_, err := h.engine().switchRule(ctx, r.Name(), false, Event{Why: why, Principal: r.Principal().Name, Ref: r.Ref()})
	return err
}

// principalByName finds a configured principal (the owner by default).
func (e *Engine) principalByName(name string) *Principal {
	for _, p := range e.cfg.Principals {
		if p.Name == name {
			return p
		}
	}
	if name == Owner.Name || len(e.cfg.Principals) == 0 {
		return Owner
	}
	// A principal removed from the configuration keeps no authority.
	return &Principal{Name: name, Scope: Scope{Kinds: []pilotage.Kind{"none"}}}
}

// SelectorOverflow is how many triggers by selector watch only part of
// what they address now, and how many times one went over since the
// start (/healthz).
type SelectorOverflow = sched.SelectorOverflow

// SelectorOverflow reports the triggers by selector over their bound.
func (e *Engine) SelectorOverflow() SelectorOverflow {
	if e.sched == nil {
		return SelectorOverflow{}
	}
	return e.sched.Overflow()
}

// OfflineChanges counts the state changes of devices that had said they
// were offline since the start: no trigger fired on them (/healthz).
func (e *Engine) OfflineChanges() uint64 {
	if e.sched == nil {
		return 0
	}
	return e.sched.OfflineChanges()
}
