package sched

import (
	"fmt"
	"sync"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// Selectors (calls and triggers by area, type or tag) are resolved
// against a principal's view, so a rule owner's selector never reaches
// past its scope, and again whenever the catalog moves, so a device
// swapped into an area is addressed without a redeploy.

// Select resolves a selector in the firing's owner's scope, now.
func (w *World) Select(kind pilotage.Kind, sel *rules.Selector) []string {
	return w.d.Cat.View(w.p).Select(kind, sel)
}

// selected returns the triggers by selector watching state id, resolved
// in each rule owner's view of the catalog now. A trigger watches at most
// rules.MaxSelected states (the first by id): one whose area grew past
// that since it was validated is bounded, and says so.
func (s *Scheduler) selected(id string) []*Trigger {
	s.mu.RLock()
	trigs, ver := s.selIdx.Snapshot()
	s.mu.RUnlock()
	return s.selectedIn(id, trigs, ver)
}

// selectedIn is selected among trigs, the triggers by selector at
// version ver (read under s.mu, as OnChange reads them with the index).
func (s *Scheduler) selectedIn(id string, trigs []*Trigger, ver uint64) []*Trigger {
	if len(trigs) == 0 {
		return nil
	}
	var gen uint64
	if snap := s.d.Cat.DevSnapshot(); snap != nil {
		gen = snap.Gen
	}
	return s.selIdx.Lookup(id, trigs, ver, gen, (*Trigger).addressed)
}

// addressed is what a trigger by selector watches now, resolved in its
// rule owner's view: at most rules.MaxSelected states (the first by id).
func (at *Trigger) addressed() []string {
	s := at.r.s
	ids := s.d.Cat.View(at.r.principal).Select(pilotage.KindState, at.t.Selector())
	s.over.note(s, at, len(ids))
	if len(ids) > rules.MaxSelected {
		ids = ids[:rules.MaxSelected]
	}
	return ids
}

// selectorOverflow tracks the triggers by selector that address more
// states than they watch: a rule's status names them (overflowNote), a
// log line marks each time one goes over, and /healthz counts them.
type selectorOverflow struct {
	mu    sync.Mutex
	now   map[*Trigger]int // over the bound now: how many it addresses
	total uint64           // times a trigger went over since the start
}

// note records that at addresses n states now.
func (o *selectorOverflow) note(s *Scheduler, at *Trigger, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	was := o.now[at]
	switch {
	case n > rules.MaxSelected && was == 0:
		if o.now == nil {
			o.now = map[*Trigger]int{}
		}
		o.now[at] = n
		o.total++
		s.d.Log.Warn("a trigger by selector addresses more states than it watches; narrow it with area, type or tag",
			"rule", at.r.name, "trigger", at.t.ID(), "addresses", n, "watched", rules.MaxSelected)
	case n > rules.MaxSelected:
		o.now[at] = n
	case was > 0:
		delete(o.now, at)
		s.d.Log.Info("a trigger by selector watches every state it addresses again", "rule", at.r.name, "trigger", at.t.ID(), "addresses", n)
	}
}

// forget drops a disarmed trigger.
func (o *selectorOverflow) forget(at *Trigger) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.now, at)
}

// overflowNote says, for a rule's status, that the trigger watches only
// part of what its selector addresses now in its owner's scope ("" when
// it watches all).
func (at *Trigger) overflowNote() string {
	d := at.r.s.d
	n := len(d.Cat.View(at.r.principal).Select(pilotage.KindState, at.t.Selector()))
	if n <= rules.MaxSelected {
		return ""
	}
	return fmt.Sprintf("its selector addresses %d states now; the trigger watches only the first %d by id: narrow it with area, type or tag", n, rules.MaxSelected)
}

// SelectorOverflow is how many triggers by selector watch only part of
// what they address now, and how many times one went over since the
// start (/healthz).
type SelectorOverflow struct {
	Now   int    `json:"now"`
	Total uint64 `json:"total"`
}

// Overflow reports the triggers by selector over their bound.
func (s *Scheduler) Overflow() SelectorOverflow {
	o := &s.over
	o.mu.Lock()
	defer o.mu.Unlock()
	return SelectorOverflow{Now: len(o.now), Total: o.total}
}
