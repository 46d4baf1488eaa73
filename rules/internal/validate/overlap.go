package validate

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
	"github.com/pilothouse/pilothouse/rules/internal/plan"

	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
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
}

// maxOverlaps bounds the rules one call's overlapping_rule warnings name.
const MaxOverlaps = 3

// overlaps warns about each call of p to a device that another installed
// rule also drives from a trigger p shares with it.
func (c *checker) overlaps(p *model.Program) {
	if c.o.Installed == nil {
		return
	}
	type site struct{ ptr, id, dev string }
	var sites []site
	model.WalkSteps(p.Steps, func(s *model.Step) bool {
		if s.Kind == model.StepCall {
			if e, ok := c.entries[s.Call]; ok && e.Kind == pilotage.KindAction && !e.RiskHints.ReadOnly {
				sites = append(sites, site{s.Ptr + "/call", s.Call, c.deviceID(e.ID)})
			}
		}
		return true
	})
	if len(sites) == 0 {
		return
	}
	warned, named := map[string]bool{}, map[string]int{}
	for _, t := range p.Triggers {
		if t.Entity == "" || strings.Contains(t.Entity, "{{") {
			continue
		}
		for _, it := range c.o.Installed.Watching(t.Entity) {
			if it.Rule == p.Name || it.Trigger == nil || !sameTrigger(t, it.Trigger) {
				continue
			}
			for _, s := range sites {
				other := c.drives(it.Calls, s.dev)
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

// drives returns the first of calls that commands device dev ("" if none).
func (c *checker) drives(calls []string, dev string) string {
	for _, id := range calls {
		if e, ok := c.cat.Get(id); ok && e.Kind == pilotage.KindAction && !e.RiskHints.ReadOnly && c.deviceID(id) == dev {
			return id
		}
	}
	return ""
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
		above, below := o.Bounds()
		return sameBound(t.Above, above) && sameBound(t.Below, below)
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
