package sched

import (
	"slices"

	"github.com/pilothouse/pilothouse/engine/internal/access"
	"github.com/pilothouse/pilothouse/engine/internal/bounds"
	"github.com/pilothouse/pilothouse/rules"
)

// What the engine reads of the armed rules, for its listings, deploys and
// /healthz.

// Name is the rule's name.
func (ar *Rule) Name() string { return ar.name }

// Ref is the program_ref the rule runs.
func (ar *Rule) Ref() string { return ar.ref }

// Compiled is the rule's program, bound to its params when they name
// entries.
func (ar *Rule) Compiled() *rules.Compiled { return ar.c }

// Principal is the rule's owner.
func (ar *Rule) Principal() *access.Principal { return ar.principal }

// Marked is why the rule's last firing found it broken ("" when not).
func (ar *Rule) Marked() string {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return ar.broken
}

// InProgress is how many of the rule's firings are running.
func (ar *Rule) InProgress() int {
	ar.mu.Lock()
	defer ar.mu.Unlock()
	return len(ar.running)
}

// Rule is the armed rule the trigger belongs to.
func (at *Trigger) Rule() *Rule { return at.r }

// RunTrigger is the trigger in its rule's run form.
func (at *Trigger) RunTrigger() *rules.RunTrigger { return at.t }

// Watching lists the triggers watching entity now: by its id, and by a
// selector that addresses it.
func (s *Scheduler) Watching(entity string) []*Trigger {
	s.mu.RLock()
	ats := slices.Clone(s.index[entity])
	s.mu.RUnlock()
	return append(ats, s.selected(entity)...)
}

// Rules lists the installed rules in memory, armed or disabled.
func (s *Scheduler) Rules() []*Rule {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*Rule, 0, len(s.rules))
	for _, ar := range s.rules {
		out = append(out, ar)
	}
	return out
}

// Armed is how many rules are installed in memory, for the start's entry.
func (s *Scheduler) Armed() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.rules)
}

// Work is the pool firings run on (its load is on /healthz).
func (s *Scheduler) Work() *bounds.Pool { return s.work }

// Live counts each principal's firings running at once.
func (s *Scheduler) Live() *bounds.Live { return &s.live }
