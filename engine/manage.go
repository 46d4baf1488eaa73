package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/pilothouse/pilothouse/engine/internal/sched"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// RuleInfo is one installed rule as listings show it: the wire record
// and, for the web UI, its plan and program.
type RuleInfo struct {
	pilotage.RuleInfo
	Plan    *pilotage.Plan  `json:"-"`
	Program json.RawMessage `json:"-"`
}

// ErrRuleNotFound is returned for unknown (or invisible) rule names.
var ErrRuleNotFound = errors.New("no installed rule with that name")

// ErrNotAllowed is returned when the caller may see a rule but not manage
// it: enabling, disabling and removing need a principal that may deploy.
var ErrNotAllowed = errors.New("this principal may not manage rules")

// visibleRule reports whether p may see rule r: its own rules, or a rule
// whose promoted program is visible in p's catalog; an administrator sees
// every rule.
func (e *Engine) visibleRule(p *Principal, r storage.Rule) bool {
	if p.OwnsRun(r.Principal) {
		return true
	}
	v := e.cat.View(p)
	if _, ok := v.Get(r.Ref); !ok {
		return false
	}
	return e.boundVisible(p, v, e.sched.Rule(r.Name))
}

// ListRules lists the installed rules visible to the caller, by name.
func (e *Engine) ListRules(ctx context.Context, lastFirings int) ([]RuleInfo, error) {
	if e.store == nil {
		return []RuleInfo{}, nil
	}
	p := e.principal(ctx)
	list, err := e.store.ListRules(ctx)
	if err != nil {
		return nil, fmt.Errorf("engine: listing rules: %w", err)
	}
	out := make([]RuleInfo, 0, len(list))
	for _, r := range list {
		if !e.visibleRule(p, r) {
			continue
		}
		ri, err := e.ruleInfo(ctx, p, r, lastFirings)
		if err != nil {
			return nil, err
		}
		out = append(out, ri)
	}
	return out, nil
}

// GetRule returns one visible rule with its program and plan.
func (e *Engine) GetRule(ctx context.Context, name string, lastFirings int) (RuleInfo, error) {
	p := e.principal(ctx)
	if e.store == nil {
		return RuleInfo{}, ErrRuleNotFound
	}
	r, err := e.store.GetRule(ctx, name)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && !e.visibleRule(p, r)) {
		return RuleInfo{}, ErrRuleNotFound
	}
	if err != nil {
		return RuleInfo{}, fmt.Errorf("engine: reading rule: %w", err)
	}
	ri, err := e.ruleInfo(ctx, p, r, lastFirings)
	if err == nil {
		ri.Approval = e.approvals.RuleApproval(ctx, r.Name, r.Ref)
		if ar := e.sched.Rule(r.Name); ar != nil && e.runsBound(ar, r.Ref) {
			ri.Plan = rules.BuildPlan(ar.Compiled()) // bound: the real ids, values and risk
		} else if b := e.body(r.Ref); b != nil {
			ri.Plan = b.DecodedPlan()
		}
	}
	return ri, err
}

// runsBound reports whether an armed rule runs its program bound to its
// input (rules.Compiled.Binds of the promoted body; the bound program
// itself keeps only its catalog references): its plan is the bound one's.
func (e *Engine) runsBound(ar *sched.Rule, ref string) bool {
	if len(ar.Compiled().RefParams()) > 0 {
		return true
	}
	b := e.body(ref)
	return b != nil && b.Compiled().Binds()
}

func (e *Engine) ruleInfo(ctx context.Context, p *Principal, r storage.Rule, lastFirings int) (RuleInfo, error) {
	// Times are in the house's zone, as traces, plans and next_fire are
	// (the store gives them back in UTC).
	zone := e.cfg.TimeZone
	ri := RuleInfo{RuleInfo: pilotage.RuleInfo{Name: r.Name, ProgramRef: r.Ref, Broken: r.Broken, InstalledAt: r.InstalledAt.In(zone), UpdatedAt: r.UpdatedAt.In(zone),
		Principal: r.Principal, Params: r.Params, LastFirings: []pilotage.FiringInfo{}, Triggers: []pilotage.TriggerInfo{}}}
	switch {
	case r.Broken != "":
		ri.Status = "broken"
	case r.Enabled:
		ri.Status = "enabled"
	default:
		ri.Status = "disabled"
	}
	if b := e.body(r.Ref); b != nil {
		ri.Program = b.Compiled().Raw
		ri.Description = b.Compiled().Description()
		ri.MaxRisk = b.MaxRisk()
	}
	if ar := e.sched.Rule(r.Name); ar != nil {
		if e.runsBound(ar, r.Ref) {
			ri.MaxRisk = rules.BuildPlan(ar.Compiled()).MaxRisk
		}
		describeArmed(ar, r.Enabled, &ri)
	}
	if r.Damaged != "" {
		ri.Status, ri.Broken = "broken", r.Damaged
	}
	if lastFirings > 0 {
		// Runs belong to the principal they ran under (a firing: the
		// rule's installer), the same rule as the trace door; an
		// administrator sees every firing.
		f := storage.RunFilter{Rule: r.Name, Kind: "firing", Principal: p.Name, Limit: lastFirings, SkipEnvelope: true}
		if p.Admin {
			f.Principal = ""
		}
		runs, err := e.store.ListRuns(ctx, f)
		if err != nil {
			return ri, fmt.Errorf("engine: listing firings: %w", err)
		}
		for _, run := range runs {
			ri.LastFirings = append(ri.LastFirings, pilotage.FiringInfo{RunID: run.ID, Status: run.Status, OK: run.OK, Started: run.Started.In(zone)})
		}
	}
	return ri, nil
}

// describe adds what the armed rule knows: its triggers, when it fires
// next, and whether it can. A broken mark comes from a firing that found
// a referenced entry gone or changed: it is judged against the catalog
// now, as the next firing will judge it (a device that came back clears
// it), without recording anything.
func describeArmed(ar *sched.Rule, enabled bool, ri *RuleInfo) {
	info := ar.Info()
	ri.Triggers = info.Triggers
	if ar.Marked() != "" || ri.Broken != "" {
		ri.Broken = ar.BrokenReason()
	}
	switch {
	case ri.Broken != "":
		ri.Status = "broken"
	case enabled:
		ri.Status = "enabled"
		ri.NextFire, ri.NextFireHeld = info.NextFire, info.Held
	default:
		ri.Status = "disabled"
	}
	ri.Missing = ar.Missing()
}

// SetRuleEnabled enables or disables a visible rule.
func (e *Engine) SetRuleEnabled(ctx context.Context, name string, on bool) (RuleInfo, error) {
	ri, err := e.GetRule(ctx, name, 0)
	if err != nil {
		return RuleInfo{}, err
	}
	if err := e.mayManage(ctx, ri, "switch"); err != nil {
		return RuleInfo{}, err
	}
	cancelled, err := e.switchRule(ctx, name, on, Event{OK: true, Principal: ri.Principal, Ref: ri.ProgramRef})
	if err != nil {
		return RuleInfo{}, err
	}
	ri, err = e.GetRule(ctx, name, 5)
	ri.CancelledRuns, ri.Note = cancelled, CancelledNote(cancelled)
	return ri, err
}

// switchRule stores a rule enabled or disabled, arms or disarms it and
// announces it with ev's OK, principal, program and reason (the owner's
// switch and the loop guard's); it returns the firings a disable
// cancelled.
func (e *Engine) switchRule(ctx context.Context, name string, on bool, ev Event) (int, error) {
	if err := e.store.SetRuleEnabled(ctx, name, on); err != nil {
		return 0, fmt.Errorf("engine: updating rule: %w", err)
	}
	cancelled := e.sched.SetEnabled(name, on)
	ev.Type, ev.Rule, ev.Status, ev.Time = "rule", name, map[bool]string{true: "enabled", false: "disabled"}[on], e.Now()
	e.notify(ev)
	return cancelled, nil
}

// CancelledNote says what cancelling n runs in progress means ("" for 0).
func CancelledNote(n int) string {
	if n == 0 {
		return ""
	}
	return rules.Plural(n, "run", "") + " in progress cancelled: the steps not reached yet (such as turning a light back off) will not run; check the devices they control"
}

// mayManage says whether the caller may switch or remove (verb) the rule
// ri: it may deploy, and a rule another principal installed whose plan its
// risk-gate policy would send to a person (a night lock rule) is only its
// to switch off or on when it may approve its own requests; else an
// assistant could disarm what a person approved.
func (e *Engine) mayManage(ctx context.Context, ri RuleInfo, verb string) error {
	p := e.principal(ctx)
	if !p.Deploy {
		return ErrNotAllowed
	}
	if reasons := e.othersRiskyRule(p, ri.Name, ri.Principal); len(reasons) > 0 {
		return pilotage.Errorf(pilotage.ErrInvalidRequest, fmt.Sprintf("principal %s may not %s rule %s: %s installed it, and its plan needs a person's approval for %s (%s); a person who may approve (the owner) can",
			shown.Quote(p.Name), verb, shown.Quote(ri.Name), shown.Quote(ri.Principal), shown.Quote(p.Name), strings.Join(reasons, ", ")))
	}
	return nil
}

// othersRiskyRule is why p may not disarm the armed rule name, which
// installer installed, without a person; none when no rule of that name
// is armed (nothing to disarm).
func (e *Engine) othersRiskyRule(p *Principal, name, installer string) []string {
	ar := e.sched.Rule(name)
	if ar == nil {
		return nil
	}
	plan := ar.Compiled().Plan
	if plan == nil {
		plan = rules.BuildPlan(ar.Compiled())
	}
	return e.approvals.NeedsPerson(p, plan, installer)
}

// RemoveRule uninstalls a visible rule. Its promoted programs stay (they are
// immutable history, and rollback targets). It returns how many of the
// rule's runs in progress were cancelled.
func (e *Engine) RemoveRule(ctx context.Context, name string) (int, error) {
	ri, err := e.GetRule(ctx, name, 0)
	if err != nil {
		return 0, err
	}
	if err := e.mayManage(ctx, ri, "remove"); err != nil {
		return 0, err
	}
	if err := e.store.RemoveRule(ctx, name); err != nil {
		return 0, fmt.Errorf("engine: removing rule: %w", err)
	}
	cancelled := e.sched.Remove(name)
	e.notify(Event{Type: "rule", Rule: name, Status: "removed", OK: true, Time: e.Now(), Principal: ri.Principal, Ref: ri.ProgramRef, By: e.principal(ctx).Name})
	return cancelled, nil
}

// Flush waits until every queued run record is written (tests, benchmarks).
func (e *Engine) Flush() {
	if e.rec != nil {
		e.rec.Flush()
	}
}
