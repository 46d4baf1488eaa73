package engine

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/pilothouse/pilothouse/engine/internal/catalog"
	"github.com/pilothouse/pilothouse/engine/internal/promoted"
	"github.com/pilothouse/pilothouse/engine/internal/sched"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// bound is a program checked as it will run with execute's input
// (rules.ValidateOptions.Bind, in the caller's scope): step 4 of execute,
// input binding, for everything that can be known before a run.
type bound struct {
	// c is what runs: the program bound to the input when it binds
	// (rules.Compiled.Binds: catalog-reference params give real ids, plan
	// and risk; param thresholds, holds, times and offsets constants),
	// else the program itself (its params read at run time, checked here).
	c *rules.Compiled
	// refs: c is bound (the program binds).
	refs bool
	// warnings of the bound program (overlapping_rule).
	warnings []pilotage.Diagnostic
}

// bind checks c with params in p's scope. diags, when not empty, are the
// input_binding findings that refuse the run.
func (e *Engine) bind(p *Principal, c *rules.Compiled, params map[string]any) (*bound, []pilotage.Diagnostic, error) {
	if len(c.Params()) == 0 {
		return &bound{c: c}, nil, nil
	}
	v := e.cat.View(p)
	if params == nil {
		params = map[string]any{}
	}
	res, err := rules.Validate(c.Raw, v, rules.ValidateOptions{
		Limits: e.cfg.Limits, HasLocation: e.cfg.Location != nil, Zone: e.cfg.TimeZone, Cache: e.rules, Bind: params,
		Automation: func(id string) (*rules.Compiled, bool) { return e.automationBody(p, id) },
		Installed:  e.installed(p),
	})
	if err != nil {
		return nil, nil, requestError(err, v.Version())
	}
	if !res.Valid {
		return nil, errorsOf(res.Diagnostics), nil
	}
	b := &bound{c: c, warnings: warningsOf(res.Diagnostics)}
	if c.Binds() {
		b.c, b.refs = res.Compiled, true
	}
	return b, nil, nil
}

// requestError is the request error of a validation that could not finish.
func requestError(err error, version string) error {
	if re, ok := err.(*pilotage.RequestError); ok {
		re.CatalogVersion = version
		return re
	}
	return &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: err.Error(), CatalogVersion: version}
}

func errorsOf(ds []pilotage.Diagnostic) []pilotage.Diagnostic {
	return slices.DeleteFunc(slices.Clone(ds), func(d pilotage.Diagnostic) bool { return d.Severity != pilotage.SeverityError })
}

func warningsOf(ds []pilotage.Diagnostic) []pilotage.Diagnostic {
	out := slices.DeleteFunc(slices.Clone(ds), func(d pilotage.Diagnostic) bool { return d.Severity == pilotage.SeverityError })
	if len(out) == 0 {
		return nil
	}
	return out
}

// binding is what a bound rule records of the entries it was bound to:
// their load-bearing fields (as a promotion baseline), to bind it again
// at start-up before the devices are announced.
func (b *bound) binding() json.RawMessage {
	if !b.refs {
		return nil
	}
	out, _ := json.Marshal(promoted.Baseline(b.c))
	return out
}

// references lists what each catalog-reference param was bound to.
func (b *bound) references(params map[string]any) map[string]any {
	out := map[string]any{}
	for _, r := range b.c.RefParams() {
		out[r.Name] = params[r.Name]
	}
	return out
}

// rebind binds an installed rule's program again (at start-up), against
// the entries recorded when it was installed: drift against the live
// catalog is found when it fires, as for any reference.
func (e *Engine) rebind(r storage.Rule, c *rules.Compiled, params map[string]any) (*rules.Compiled, error) {
	var base map[string]promoted.BaselineField
	if err := json.Unmarshal(r.Binding, &base); err != nil {
		return nil, fmt.Errorf("its binding is not readable: %w", err)
	}
	if params == nil {
		params = map[string]any{}
	}
	res, err := rules.Validate(c.Raw, promoted.Catalog(base), rules.ValidateOptions{
		Limits: e.cfg.Limits, HasLocation: true, Zone: e.cfg.TimeZone, Cache: e.rules, Bind: params, Recorded: true,
		Automation: e.recordedBody,
	})
	if err != nil {
		return nil, err
	}
	if !res.Valid {
		return nil, fmt.Errorf("its params no longer bind: %s", diagSummary(res.Diagnostics))
	}
	return heldBound(res.Compiled, r.Ref), nil
}

// heldBound is a bound program as an installed rule holds it: under its
// program_ref, without its plan (derived again when a listing asks, as
// for promoted bodies: a house holds thousands of rules).
func heldBound(c *rules.Compiled, ref string) *rules.Compiled {
	h := c.Hold(ref)
	h.Plan = nil
	return h
}

func diagSummary(ds []pilotage.Diagnostic) string {
	s := ""
	for _, d := range errorsOf(ds) {
		if s != "" {
			s += "; "
		}
		s += d.Path + ": " + d.Message
	}
	return s
}

// boundVisible reports whether p may see every entry an installed rule
// was bound to: a rule bound to an entry p cannot see is as invisible to
// p as an automation reaching one (catalog.Service.View).
func (e *Engine) boundVisible(p *Principal, v *view, ar *sched.Rule) bool {
	if ar == nil || len(ar.Compiled().RefParams()) == 0 || p.Unrestricted() {
		return true
	}
	return catalog.SeesAll(p, v, e.cat.DevSnapshot(), ar.Compiled().Refs)
}

// installedView is the validator's view of the installed rules
// (rules.InstalledRules) for one caller: the armed rules it may see.
type installedView struct {
	e *Engine
	p *Principal
	v *view
}

func (e *Engine) installed(p *Principal) rules.InstalledRules {
	if e.sched == nil {
		return nil
	}
	return installedView{e: e, p: p, v: e.cat.View(p)}
}

// Watching implements rules.InstalledRules.
func (iv installedView) Watching(entity string) []rules.InstalledTrigger {
	var out []rules.InstalledTrigger
	for _, at := range iv.e.sched.Watching(entity) {
		ar := at.Rule()
		if !iv.e.armedVisible(iv.p, iv.v, ar) {
			continue
		}
		out = append(out, rules.InstalledTrigger{Rule: ar.Name(), Trigger: at.RunTrigger(), Calls: ar.Compiled().Calls(), Selects: ar.Compiled().CallSelectors()})
	}
	return out
}

// armedVisible reports whether p may see an armed rule (visibleRule for
// what is in memory).
func (e *Engine) armedVisible(p *Principal, v *view, ar *sched.Rule) bool {
	if ar.Principal() != nil && p.OwnsRun(ar.Principal().Name) {
		return true
	}
	if _, ok := v.Get(ar.Ref()); !ok {
		return false
	}
	return e.boundVisible(p, v, ar)
}
