package validate

import (
	"slices"
	"strconv"

	"github.com/expr-lang/expr/ast"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// resolveSelector resolves a selector against the caller's catalog and
// records the set and its aggregate risk on it (the plan shows them). An
// empty set is a warning at path; more than MaxSelected entries an error.
// at, when set, locates them inside the string at path (an expression's
// selector object).
func (c *checker) resolveSelector(s *model.Selector, kind pilotage.Kind, path string, at *pilotage.Range) []*pilotage.Entry {
	if s.Name == "" && s.Tag == "" || s.Area == "" && s.Type == "" && s.Tag == "" {
		return nil // reported when decoded (a tag alone reads the states carrying it)
	}
	if c.selectors++; c.selectors > model.MaxSelectors {
		c.d.Add(core.CodeConstraint, path, "address these devices by id, or merge selectors", "a program may hold at most %d selectors", model.MaxSelectors).Range = at
		return nil
	}
	ids := model.Resolve(c.cat, kind, s)
	if len(ids) > model.MaxSelected {
		c.d.Add(core.CodeConstraint, path, "narrow it with area, type or tag", "%s addresses %d %s entries; at most %d are allowed", s.Describe(), len(ids), kind, model.MaxSelected).Range = at
		return nil
	}
	if len(ids) == 0 {
		c.d.Add(core.CodeNoMatch, path, "pilotage_lookup list with tag \"area:<x>\" or \"type:<x>\" shows what exists", "%s addresses no %s entry in your catalog now", s.Describe(), kind).Range = at
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
	for _, e := range c.resolveSelector(s.Target, pilotage.KindAction, s.Ptr+"/call", nil) {
		one := *s
		one.Call = e.ID
		c.args(&one, e)
	}
}

// selectTrigger checks a state trigger by selector. A held ("for") one
// holds each state it addresses on its own.
func (c *checker) selectTrigger(t *model.Trigger) {
	c.resolveSelector(t.Select, pilotage.KindState, t.Ptr+"/state", nil)
}

// exprSelector checks the selector object of states({…}) or since({…})
// as a state trigger's is checked (constant members, property and at
// least one of area, type, tag), each finding located inside the
// expression, and resolves it (MaxSelectors counts it). It reports
// whether the call's argument is an object at all.
func (c *checker) exprSelector(n *ast.CallNode, name string, x *model.Expr, rng func(int, int) *pilotage.Range) bool {
	s, obj, badKey, badVal, ok := model.SelectorArg(n)
	if !ok {
		return false
	}
	from, to := nodeSpan(obj)
	at := rng(from, closingBrace(x.Src, to))
	eg := name + "({area: 'hall', tag: 'class:occupancy'})"
	if badKey != nil {
		c.badSelectorMember(name, eg, badKey, badVal, x, rng)
		return true
	}
	if s.Name == "" && s.Tag == "" {
		c.d.Add(core.CodeMissingField, x.Ptr, "e.g. "+eg+", or property: 'occupancy'",
			"%s()'s selector object needs a tag its states carry, or property: which state of each device it reads", name).Range = at
	} else if s.Area == "" && s.Type == "" && s.Tag == "" {
		c.d.Add(core.CodeMissingField, x.Ptr, "e.g. "+eg, "%s()'s selector object needs at least one of area, type, tag", name).Range = at
	}
	if c.resolveSelector(&s, pilotage.KindState, x.Ptr, at); s.Hints == (pilotage.RiskHints{}) {
		return true // not resolved: reported
	}
	if c.exprSels == nil {
		c.exprSels = map[string][]string{}
	}
	c.exprSels[s.Key()] = s.Resolved
	return true
}

// badSelectorMember reports a member of a selector object that is not
// one of its members with a non-empty string constant, located at it.
func (c *checker) badSelectorMember(name, eg string, key, val ast.Node, x *model.Expr, rng func(int, int) *pilotage.Range) {
	kf, kt := nodeSpan(key)
	vf, vt := nodeSpan(val)
	at := rng(min(kf, vf), max(kt, vt, kf+1))
	k, _ := key.(*ast.StringNode)
	v, isStr := val.(*ast.StringNode)
	switch {
	case k == nil || !slices.Contains(selectorKeys, k.Value):
		c.d.Add(core.CodeUnknownField, x.Ptr, "a selector object has area, type, tag and property: "+eg,
			"%s()'s selector object has no member %s", name, nodeText(key)).Range = at
	case isStr && v.Value == "":
		c.d.Add(core.CodeConstraint, x.Ptr, "", "a selector's %s is not empty", k.Value).Range = at
	default:
		c.d.Add(core.CodeNonConstantRef, x.Ptr, "write each member as a string constant: "+eg,
			"a selector object's %s is a string constant, so every state %s() may read is known before the program runs", k.Value, name).Range = at
	}
}

// closingBrace is the rune offset just past the "}" that closes an
// object whose last member ends at to (nodes do not span their closing
// brace); to when there is none.
func closingBrace(src string, to int) int {
	r := []rune(src)
	for i := to; i < len(r); i++ {
		switch r[i] {
		case ' ', '\t', '\n', ',':
			continue
		case '}':
			return i + 1
		}
		break
	}
	return to
}

// selectorKeys are the members of a selector object in an expression.
var selectorKeys = append(slices.Clone(model.SelectorMembers.Filters), model.SelectorMembers.Property)

// nodeText is a map key as written, for messages.
func nodeText(n ast.Node) string {
	if s, ok := n.(*ast.StringNode); ok {
		return strconv.Quote(s.Value)
	}
	return "computed by an expression"
}
