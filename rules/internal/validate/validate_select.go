package validate

import (
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// resolveSelector resolves a selector against the caller's catalog and
// records the set and its aggregate risk on it (the plan shows them). An
// empty set is a warning at path; more than MaxSelected entries an error.
func (c *checker) resolveSelector(s *model.Selector, kind pilotage.Kind, path string) []*pilotage.Entry {
	if s.Name == "" || (s.Area == "" && s.Type == "" && s.Tag == "") {
		return nil // reported when decoded
	}
	if c.selectors++; c.selectors > model.MaxSelectors {
		c.d.Add(core.CodeConstraint, path, "address these devices by id, or merge selectors", "a program may hold at most %d selectors", model.MaxSelectors)
		return nil
	}
	ids := model.Resolve(c.cat, kind, s)
	if len(ids) > model.MaxSelected {
		c.d.Add(core.CodeConstraint, path, "narrow it with area, type or tag", "%s addresses %d %s entries; at most %d are allowed", s.Describe(), len(ids), kind, model.MaxSelected)
		return nil
	}
	if len(ids) == 0 {
		c.d.Add(core.CodeNoMatch, path, "pilotage_lookup list with tag \"area:<x>\" or \"type:<x>\" shows what exists", "%s addresses no %s entry in your catalog now", s.Describe(), kind)
	}
	entries := make([]*pilotage.Entry, 0, len(ids))
	hints := make([]pilotage.RiskHints, 0, len(ids))
	for _, id := range ids {
		if e, ok := c.cat.Get(id); ok {
			entries = append(entries, e)
			hints = append(hints, e.RiskHints)
		}
	}
	s.Resolved = ids
	s.Hints = emptyBound(s)
	if len(hints) > 0 {
		s.Hints = pilotage.Aggregate(hints...)
	}
	return entries
}

// emptyBound is the risk a selector matching nothing now is planned at:
// its type's (a lock's is security), else control. It is what the rule
// is approved for, and at run time a rule never calls an entry above its
// approved risk (the engine's ceiling), so what joins later and is
// riskier is refused rather than called unapproved.
func emptyBound(s *model.Selector) pilotage.RiskHints {
	if s.Type != "" {
		return pilotage.HintsOf(pilotage.DeviceTypeRisk(s.Type))
	}
	return pilotage.HintsOf(pilotage.RiskControl)
}

// selectCall checks a call by selector: its arguments against the
// input_schema of every action it resolves to now, each finding naming
// the action that rejects them.
func (c *checker) selectCall(s *model.Step) {
	for _, e := range c.resolveSelector(s.Target, pilotage.KindAction, s.Ptr+"/call") {
		one := *s
		one.Call = e.ID
		c.args(&one, e)
	}
}

// selectTrigger checks a state trigger by selector. A held ("for") one
// holds each state it addresses on its own.
func (c *checker) selectTrigger(t *model.Trigger) {
	c.resolveSelector(t.Select, pilotage.KindState, t.Ptr+"/state")
}
