package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// RuleReads lists the state entries an installed rule's triggers and
// conditions read, in order of first mention: what to look at to see why
// it fired, or did not. Entries outside the caller's scope are left out;
// an invisible rule is ErrRuleNotFound.
func (e *Engine) RuleReads(ctx context.Context, name string) ([]string, error) {
	p := e.principal(ctx)
	if e.store == nil {
		return nil, ErrRuleNotFound
	}
	r, err := e.store.GetRule(ctx, name)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && !e.visibleRule(p, r)) {
		return nil, ErrRuleNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("engine: reading rule: %w", err)
	}
	var c *rules.Compiled
	if ar := e.sched.Rule(name); ar != nil {
		c = ar.Compiled() // bound to its params when they name entries
	} else if b := e.body(r.Ref); b != nil {
		c = b.Compiled()
	}
	if c == nil {
		return nil, nil // its program no longer compiles: nothing to show
	}
	v := e.cat.View(p)
	var out []string
	seen := map[string]bool{}
	add := func(id string) {
		if en, ok := v.Get(id); ok && en.Kind == pilotage.KindState && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, id := range c.Reads() {
		add(id)
	}
	return out, nil
}
