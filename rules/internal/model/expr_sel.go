package model

// Catalog readers given a selector object instead of an id:
// states({area: 'hall', property: 'occupancy'}), since({...}) and
// available({...}) read every state a selector addresses, so a condition
// over "any motion sensor of the hall" keeps working when a sensor joins
// the area.

import (
	"fmt"
	"strconv"

	"github.com/expr-lang/expr/ast"

	"github.com/pilothouse/pilothouse/pilotage"
)

// SelRead is one call of a catalog reader with a selector object.
type SelRead struct {
	Fn   string // states, since or available
	Sel  Selector
	Text string // the call as a trace's reads name it
}

// SelectorReaders are the readers that take a selector object.
var SelectorReaders = map[string]bool{"states": true, "entities": true, "since": true, "available": true}

// SelectorArg reads a selector object literal: the call's one argument
// when it is an object (a map literal, or the _map call a literal with a
// computed member is compiled to). ok is false when it is not; obj is the
// object's node; badKey and badVal are the first member that is not a
// selector member with a non-empty string constant value (the caller
// reports it).
func SelectorArg(c *ast.CallNode) (s Selector, obj, badKey, badVal ast.Node, ok bool) {
	if len(c.Arguments) != 1 {
		return s, nil, nil, nil, false
	}
	obj = c.Arguments[0]
	var pairs [][2]ast.Node
	switch m := obj.(type) {
	case *ast.MapNode:
		for _, p := range m.Pairs {
			if pair, isPair := p.(*ast.PairNode); isPair {
				pairs = append(pairs, [2]ast.Node{pair.Key, pair.Value})
			}
		}
	case *ast.CallNode:
		// memPatcher's form of an object built at run time:
		// _map(mem, k1, v1, k2, v2, …).
		id, isID := m.Callee.(*ast.IdentifierNode)
		if !isID || id.Value != "_map" || len(m.Arguments)%2 != 1 {
			return s, nil, nil, nil, false
		}
		for i := 1; i+1 < len(m.Arguments); i += 2 {
			pairs = append(pairs, [2]ast.Node{m.Arguments[i], m.Arguments[i+1]})
		}
	default:
		return s, nil, nil, nil, false
	}
	dst := map[string]*string{"area": &s.Area, "type": &s.Type, "tag": &s.Tag, SelectorMembers.Property: &s.Name}
	for _, p := range pairs {
		k, kok := p[0].(*ast.StringNode)
		v, vok := p[1].(*ast.StringNode)
		if !kok || !vok || dst[k.Value] == nil || v.Value == "" {
			if badKey == nil {
				badKey, badVal = p[0], p[1]
			}
			continue
		}
		*dst[k.Value] = v.Value
	}
	return s, obj, badKey, badVal, true
}

// collectSels finds the reader calls with a well-formed selector object
// (the validator reports the others).
func collectSels(root ast.Node) []SelRead {
	var out []SelRead
	ast.Find(root, func(n ast.Node) bool {
		c, ok := n.(*ast.CallNode)
		if !ok {
			return false
		}
		fn, ok := c.Callee.(*ast.IdentifierNode)
		if !ok || !SelectorReaders[fn.Value] {
			return false
		}
		if s, _, bad, _, ok := SelectorArg(c); ok && bad == nil {
			out = append(out, SelRead{Fn: fn.Value, Sel: s, Text: fn.Value + "(" + s.Literal() + ")"})
		}
		return false
	})
	return out
}

// selectorFrom is the selector of a map an expression built from a
// selector object (its members are constants: validation checked them).
func selectorFrom(m map[string]any) Selector {
	str := func(k string) string { s, _ := m[k].(string); return s }
	return Selector{Area: str("area"), Type: str("type"), Tag: str("tag"), Name: str(SelectorMembers.Property)}
}

// SelectStates lists the states s addresses now: a World that is
// Selecting resolves it (in the rule owner's scope, live); any other
// gets resolved, the set validation found. More than MaxSelected is an
// error: a condition never reads an unbounded set.
func SelectStates(w World, s *Selector, resolved []string) ([]string, error) {
	ids := resolved
	if sw, ok := w.(Selecting); ok {
		sel := *s
		sel.Resolved = resolved
		ids = sw.Select(pilotage.KindState, &sel)
	}
	if len(ids) > MaxSelected {
		return nil, fmt.Errorf("%s addresses %d states now; at most %d are read by one expression", s.Quantified("any"), len(ids), MaxSelected)
	}
	return ids, nil
}

// statesOf is states({...}): the current values of the states s
// addresses, in id order; an offline device's reads null, as state()
// does.
func statesOf(w World, s *Selector, resolved []string) ([]any, error) {
	ids, err := SelectStates(w, s, resolved)
	if err != nil || w == nil {
		return nil, err // no World (an Env that folds params): nothing read
	}
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = stateRead(w, id)
	}
	return out, nil
}

// entitiesOf is entities({...}): each state s addresses as {id, value},
// in id order, for a message that says which ("the back door is open").
func entitiesOf(w World, s *Selector, resolved []string) ([]any, error) {
	ids, err := SelectStates(w, s, resolved)
	if err != nil || w == nil {
		return nil, err // no World (an Env that folds params): nothing read
	}
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = map[string]any{"id": id, "value": stateRead(w, id)}
	}
	return out, nil
}

// sinceOf is since({...}): the seconds since the most recent change
// among the states s addresses; nil when none has a value yet.
func sinceOf(w World, s *Selector, resolved []string) (any, error) {
	ids, err := SelectStates(w, s, resolved)
	if err != nil {
		return nil, err
	}
	var out any
	for _, id := range ids {
		if v, ok := SinceOf(w, id); ok {
			if cur, has := out.(float64); !has || v < cur {
				out = v
			}
		}
	}
	return out, nil
}

// availableOf is available({...}): false when the device of any state s
// addresses is offline.
func availableOf(w World, s *Selector, resolved []string) (bool, error) {
	if w == nil {
		return true, nil // no World: nothing is known to be offline
	}
	ids, err := SelectStates(w, s, resolved)
	if err != nil {
		return false, err
	}
	for _, id := range ids {
		if !AvailableIn(w, id) {
			return false, nil
		}
	}
	return true, nil
}

// SinceOf is the seconds since id last changed, on w's clock.
func SinceOf(w World, id string) (float64, bool) {
	t, ok := LastChangedOf(w, id)
	if !ok {
		return 0, false
	}
	return max(w.Now().Sub(t).Seconds(), 0), true
}

// stateRead is state(id): nil when unknown (the World reads an offline
// device's state as nil).
func stateRead(w World, id string) any {
	v, _ := w.State(id)
	return v
}

// Literal is s as an expression's selector object: {area: 'hall',
// property: 'occupancy'}.
func (s *Selector) Literal() string {
	b := []byte{'{'}
	for _, m := range [...][2]string{{"area", s.Area}, {"type", s.Type}, {"tag", s.Tag}, {SelectorMembers.Property, s.Name}} {
		if m[1] == "" {
			continue
		}
		if len(b) > 1 {
			b = append(b, ", "...)
		}
		b = append(b, m[0]+": "...)
		b = strconv.AppendQuote(b, m[1])
	}
	return string(append(b, '}'))
}

// SelReads is what a selector reader reads now, id by id: each state's
// value (states), the seconds since it changed (since; nil when it has
// no value yet) or whether its device is online (available). It is what
// a trace entry records, so a reader sees which states the selector
// addressed.
func SelReads(w World, r SelRead, resolved []string) (map[string]any, error) {
	ids, err := SelectStates(w, &r.Sel, resolved)
	if err != nil {
		return nil, err
	}
	out := make(map[string]any, len(ids))
	for _, id := range ids {
		switch r.Fn {
		case "states", "entities":
			out[id] = stateRead(w, id)
		case "available":
			out[id] = AvailableIn(w, id)
		default:
			out[id] = nil
			if v, ok := SinceOf(w, id); ok {
				out[id] = v
			}
		}
	}
	return out, nil
}
