package validate

import (
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
	"github.com/pilothouse/pilothouse/rules/internal/plan"
)

// InstalledRules is the validator's view of the rules installed in the
// house, scoped to what the caller may see (the engine implements it):
// a program that drives the same device from the same trigger as another
// rule gets an overlapping_rule warning.
type InstalledRules interface {
	// Watching lists the triggers of the installed, enabled rules that
	// watch entity (a state or event id).
	Watching(entity string) []InstalledTrigger
}

// InstalledTrigger is one trigger of an installed rule.
type InstalledTrigger struct {
	Rule    string            // the rule's name
	Trigger *model.RunTrigger // in its run form
	Calls   []string          // the catalog ids its body calls (Compiled.Calls)
	// Selects are its body's calls by selector (Compiled.CallSelectors),
	// resolved against the caller's catalog when compared.
	Selects []*model.Selector
}

// MaxOverlaps bounds the rules one call's overlapping_rule warnings name.
const MaxOverlaps = 3

// overlaps warns about each call of p that writes a device another
// installed rule also writes from a trigger p shares with it. Selectors,
// p's and the installed rules', count as what they address in the
// caller's catalog now. Two notifications race nothing: both arrive.
func (c *checker) overlaps(p *model.Program) {
	if c.o.Installed == nil {
		return
	}
	type site struct{ ptr, id, dev string }
	var sites []site
	model.WalkSteps(p.Steps, func(s *model.Step) bool {
		if s.Kind != model.StepCall {
			return true
		}
		ids := []string{s.Call}
		if s.Target != nil {
			ids = s.Target.Resolved
		}
		for _, id := range ids {
			if dev := c.writes(id); dev != "" {
				sites = append(sites, site{s.Ptr + "/call", id, dev})
			}
		}
		return true
	})
	if len(sites) == 0 {
		return
	}
	warned, named := map[string]bool{}, map[string]int{}
	for _, t := range p.Triggers {
		for _, entity := range watched(t) {
			for _, it := range c.o.Installed.Watching(entity) {
				if it.Rule == p.Name || it.Trigger == nil || !sameTrigger(t, it.Trigger) {
					continue
				}
				calls := it.Calls
				for _, sel := range it.Selects {
					calls = append(calls[:len(calls):len(calls)], model.Resolve(c.cat, pilotage.KindAction, sel)...)
				}
				for _, s := range sites {
					other := c.drives(calls, s.dev)
					if other == "" || warned[s.ptr+"\x00"+it.Rule] || named[s.ptr] == MaxOverlaps {
						continue
					}
					warned[s.ptr+"\x00"+it.Rule] = true
					named[s.ptr]++
					c.d.Add(core.CodeOverlappingRule, s.ptr, "merge the two into one rule, or make their conditions exclusive; deploying under the name "+it.Rule+" replaces that rule",
						"rule %q also calls %s %s (its trigger %q): the two rules race and the last command wins", it.Rule, other, plan.MidSentence(plan.DescribeTrigger(it.Trigger, model.ZoneName(c.o.Zone), c.o.Zone)), it.Trigger.ID())
				}
			}
		}
	}
}

// watched lists the states or events a trigger of p watches: its entity,
// or what its selector addresses now.
func watched(t *model.Trigger) []string {
	switch {
	case t.Select != nil:
		return t.Select.Resolved
	case t.Entity == "" || strings.Contains(t.Entity, "{{"):
		return nil
	}
	return []string{t.Entity}
}

// drives returns the first of calls that writes device dev ("" if none).
func (c *checker) drives(calls []string, dev string) string {
	for _, id := range calls {
		if c.writes(id) == dev {
			return id
		}
	}
	return ""
}

// writes names the device a call of action id writes ("" for none): a
// call that leaves the house (openWorld: a notification) changes no
// state here, so two of them race nothing.
func (c *checker) writes(id string) string {
	e, ok := c.cat.Get(id)
	if !ok || e.Kind != pilotage.KindAction || e.RiskHints.ReadOnly || e.RiskHints.OpenWorld {
		return ""
	}
	return c.deviceID(id)
}

// deviceID names the device an entry belongs to.
func (c *checker) deviceID(id string) string {
	if e, ok := c.cat.Get(id); ok {
		if d := c.deviceOf(e); d != nil {
			return d.ID
		}
	}
	dev, _, _ := strings.Cut(id, ".")
	return dev
}

// sameTrigger reports whether t and o fire on the same changes of the
// entity they both watch: the same kind, and equal filters where both set
// one (numeric thresholds must be equal; event value lists must share a
// value).
func sameTrigger(t *model.Trigger, o *model.RunTrigger) bool {
	if t.Kind != o.Kind() {
		return false
	}
	differ := func(a, b model.Value) bool { return a.Set && b.Set && core.CompactJSON(a.V) != core.CompactJSON(b.V) }
	switch t.Kind {
	case model.TriggerState, model.TriggerAvailable:
		return !differ(t.To, o.To()) && !differ(t.From, o.From())
	case model.TriggerEvent:
		return eventsMeet(t.To, o.To())
	case model.TriggerNumeric:
		// A threshold param is not known before it is bound.
		above, below := o.Bounds()
		return len(t.Inputs) == 0 && sameBound(t.Above, above) && sameBound(t.Below, below)
	}
	return false
}

func sameBound(a, b *float64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// eventsMeet reports whether two event filters (a value, a list of
// values, or none) match a payload in common.
func eventsMeet(a, b model.Value) bool {
	if !a.Set || !b.Set {
		return true
	}
	list, ok := a.V.([]any)
	if !ok {
		return model.EventMatches(b, a.V)
	}
	for _, v := range list {
		if model.EventMatches(b, v) {
			return true
		}
	}
	return false
}
