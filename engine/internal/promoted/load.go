package promoted

import (
	"log/slog"
	"sort"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// Loader registers stored promoted programs at start-up.
type Loader struct {
	Held    *Held
	Compile func(storage.Program) (*rules.Compiled, error) // a stored body, validated as recorded
	Add     func(*pilotage.Entry, *rules.Compiled)         // registers an automation in the catalog
	Log     *slog.Logger
}

// Load compiles every stored promoted program and registers its entry;
// only the bodies of installed (by ref) are held: a house's version
// history grows with every redeploy, and every body held is work for the
// collector.
func (l Loader) Load(progs []storage.Program, installed map[string]bool) {
	// Bodies may call other automations: load in creation order (oldest
	// first), which is dependency order since a callee is promoted first.
	sort.Slice(progs, func(i, j int) bool { return progs[i].CreatedAt.Before(progs[j].CreatedAt) })
	ld := &loading{Loader: l, byRef: make(map[string]storage.Program, len(progs)), installed: installed, done: map[string]bool{}}
	for _, pr := range progs {
		ld.byRef[pr.Ref] = pr
	}
	for _, pr := range progs {
		ld.register(pr)
	}
}

// loading is one start-up's Load.
type loading struct {
	Loader
	byRef     map[string]storage.Program
	installed map[string]bool
	done      map[string]bool
}

// register compiles pr and registers its catalog entry, after the
// automations it calls: an automation's reach (who may see it) is computed
// from its callees' when it is registered. Creation order is normally
// dependency order, but creation times come from a wall clock, which may
// have stepped back.
func (l *loading) register(pr storage.Program) {
	if l.done[pr.Ref] {
		return
	}
	l.done[pr.Ref] = true
	known := l.Held.Get(pr.Ref)
	var c *rules.Compiled
	var plan *pilotage.Plan
	if known != nil { // compiled already as another program's callee
		c, plan = known.Compiled(), known.DecodedPlan()
	} else {
		var err error
		if c, err = l.Compile(pr); err != nil {
			l.Log.Warn("promoted program no longer compiles; its rule will be marked broken", "ref", pr.Ref, "err", err)
			return
		}
		c = c.Hold(pr.Ref)
		plan = c.Plan
	}
	for i, id := range c.Refs {
		if i < len(c.Entries) && c.Entries[i] != nil && c.Entries[i].Kind == pilotage.KindAutomation {
			if callee, ok := l.byRef[id]; ok {
				l.register(callee)
			}
		}
	}
	en := Entry(pr.Ref, c, plan)
	if l.installed[pr.Ref] && known == nil {
		l.Held.Keep(pr.Ref, Stored(pr, c))
	}
	l.Add(en, c)
}
