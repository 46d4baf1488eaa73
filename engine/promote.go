package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/pilothouse/pilothouse/engine/internal/promoted"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// promotion is a program ready to be promoted: what storage keeps of it
// and its catalog entry. Preparing it changes nothing in memory or
// storage; commit registers it once storage holds it, so a deploy that
// storage refused leaves no automation behind for another rule to call.
type promotion struct {
	prog  storage.Program
	entry *pilotage.Entry
	base  map[string]promoted.BaselineField
	held  *promoted.Body  // the body already held under this ref, if any
	c     *rules.Compiled // the program held under ref (rules.Compiled.Hold)
}

// preparePromotion computes c's program_ref, stored form and entry.
func (e *Engine) preparePromotion(p *Principal, c *rules.Compiled) *promotion {
	ref := promoted.Ref(c)
	c = c.Hold(ref)
	base := promoted.Baseline(c)
	bj, _ := json.Marshal(base)
	// A body promoted before (redeploying a program_ref) keeps its plan
	// encoded, not in c: take it from there, and keep the body held.
	plan, held := c.Plan, e.bodies.Get(ref)
	if plan == nil && held != nil {
		plan = held.DecodedPlan()
	}
	pj, _ := json.Marshal(plan)
	en := promoted.Entry(ref, c, plan)
	hj, _ := json.Marshal(en.RiskHints)
	prog := storage.Program{
		Ref: ref, Name: c.Name(), Principal: p.Name, Body: pilotage.CanonicalJSON(c.Raw), Plan: pj,
		Params: en.InputSchema, RiskHints: hj, Risk: string(en.Risk), Baseline: bj, CreatedAt: e.Now(),
	}
	return &promotion{prog: prog, entry: en, base: base, held: held, c: c}
}

// commitPromotion holds the promoted body and registers its catalog entry;
// call it only once storage committed the program. It returns the held
// program, for an installed rule to keep: a body promoted before is the
// same program (refs are content-addressed), so a redeploy keeps that one.
func (e *Engine) commitPromotion(pr *promotion) *rules.Compiled {
	b := pr.held
	if b == nil {
		b = e.bodies.Keep(pr.prog.Ref, promoted.NewBody(pr.c, pr.prog.Ref, promoted.Sums(pr.base)))
	}
	e.cat.AddAutomation(pr.entry, b.Compiled())
	return b.Compiled()
}

// body returns the compiled promoted body of ref, compiling a stored
// version that is not held in memory (nil if there is none).
func (e *Engine) body(ref string) *promoted.Body {
	b := e.bodies.Get(ref)
	if b != nil || e.store == nil {
		return b
	}
	return e.loadBody(ref)
}

// loadBody compiles a stored promoted program no installed rule uses (a
// rollback target, an older version) on first use, and keeps it. Start-up
// holds only the installed versions in memory: a house's version history
// grows with every redeploy, and every body held is work for the collector.
func (e *Engine) loadBody(ref string) *promoted.Body {
	pr, err := e.store.GetProgram(context.Background(), ref)
	if err != nil {
		return nil
	}
	c, err := e.compileStored(pr)
	if err != nil {
		e.log.Warn("promoted program no longer compiles", "ref", ref, "err", err)
		return nil
	}
	return e.bodies.Keep(ref, promoted.Stored(pr, c)) // or the one another caller compiled meanwhile
}

// recordedBody is any promoted body by id, whoever may see it: what a
// recorded program (an installed rule re-validated at start-up, a stored
// promotion) called when it was checked.
func (e *Engine) recordedBody(id string) (*rules.Compiled, bool) {
	if b := e.body(id); b != nil {
		return b.Compiled(), true
	}
	return nil, false
}

// automationBody resolves a visible automation entry to its compiled body.
func (e *Engine) automationBody(p *Principal, id string) (*rules.Compiled, bool) {
	// Every call step asks (an action id among them): only an automation
	// entry may cost a load.
	if en, ok := e.cat.View(p).Get(id); !ok || en.Kind != pilotage.KindAutomation {
		return nil, false
	}
	b := e.body(id)
	if b == nil {
		return nil, false
	}
	return b.Compiled(), true
}

// baselineDrift compares a promoted body's baseline with the caller's
// current catalog; "" means no drift.
func (e *Engine) baselineDrift(p *Principal, ref string) string {
	b := e.body(ref)
	if b == nil {
		return "the promoted program is not available"
	}
	switch id, gone := b.Drift(e.cat.View(p).Get); {
	case id == "":
		return ""
	case gone:
		return "referenced entry " + shown.Quote(id) + " no longer exists"
	default:
		return "referenced entry " + shown.Quote(id) + " changed since promotion"
	}
}

// loadAutomations compiles every stored promoted program back into memory
// and the catalog (at start-up).
func (e *Engine) loadAutomations(ctx context.Context) error {
	progs, err := e.store.ListPrograms(ctx, "")
	if err != nil {
		return fmt.Errorf("engine: loading promoted programs: %w", err)
	}
	installed := map[string]bool{}
	if list, err := e.store.ListRules(ctx); err == nil {
		for _, r := range list {
			installed[r.Ref] = true
		}
	}
	promoted.Loader{Held: &e.bodies, Compile: e.compileStored, Add: e.cat.AddAutomation, Log: e.log}.Load(progs, installed)
	return nil
}

// compileStored recompiles a stored body. It validates against the full
// (owner) catalog as recorded: expressions and structure are what matters;
// drift against the live catalog is checked at firing time.
func (e *Engine) compileStored(pr storage.Program) (*rules.Compiled, error) {
	var base map[string]promoted.BaselineField
	if err := json.Unmarshal(pr.Baseline, &base); err != nil {
		return nil, fmt.Errorf("bad baseline: %w", err)
	}
	res, err := rules.Validate(pr.Body, promoted.Catalog(base), rules.ValidateOptions{
		Limits: e.cfg.Limits, HasLocation: true, Zone: e.cfg.TimeZone, Cache: e.rules, Recorded: true,
		Automation: e.recordedBody,
	})
	if err != nil {
		return nil, err
	}
	if !res.Valid {
		var msgs []string
		for _, d := range res.Diagnostics {
			if d.Severity == pilotage.SeverityError {
				msgs = append(msgs, d.Path+": "+d.Message)
			}
		}
		return nil, fmt.Errorf("invalid: %s", strings.Join(msgs, "; "))
	}
	return res.Compiled, nil
}
