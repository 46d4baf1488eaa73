package model

import (
	"encoding/json"
	"slices"
	"sort"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Catalog is the validator's view of the catalog: only the entries visible
// to the caller (spec §6.3 authorization scope). Hints and "unknown name"
// findings are computed from it alone, so invisible names are
// indistinguishable from nonexistent ones.
type Catalog interface {
	// Get returns the visible entry with this id.
	Get(id string) (*pilotage.Entry, bool)
	// IDs lists every visible id, sorted (for close-match hints).
	IDs() []string
	// Version is the caller-scoped catalog_version of this snapshot.
	Version() string
}

// Compiled is a validated program, ready to plan, install and run: what
// validation found (its references, plan, callees) and the program
// lowered into its run form (runform.go), which the interpreter, the
// planner and the scheduler read through it. It is produced once by
// Validate and immutable afterwards.
type Compiled struct {
	Raw  json.RawMessage // the canonical program JSON it was decoded from
	Plan *pilotage.Plan
	// Refs are the catalog ids the program references, sorted, unique.
	Refs []string
	// Entries are the referenced entries as validated (the promotion
	// baseline is taken from them): Entries[i] is the entry of Refs[i]. A
	// slice beside Refs instead of a map: a house holds thousands of
	// compiled programs, and a map of two entries is 256 bytes for the
	// collector to mark. Look one up with Entry.
	Entries []*pilotage.Entry
	// Sub are the compiled bodies of the promoted automations it calls,
	// resolved at validation time (nil when resolved through World).
	Sub map[string]*Compiled
	// CallDepth is how deep its promoted-automation calls nest: 0 when it
	// calls none, else 1 + the deepest CallDepth of the bodies it calls
	// (a body not resolved at validation counts 0). A run nests it that
	// deep below its own frame.
	CallDepth int

	// ExprSels are what the selector objects of its expressions
	// (states({…}), since({…})) resolved to when validated, by
	// Selector.Key: what a test run reads, and what the plan lists.
	ExprSels map[string][]string

	// RefList are the program's catalog-reference params, by name.
	RefList []*RefParam

	Form
}

// RefParams are the program's catalog-reference params, sorted by name
// (nil when it declares none): execute binds them (ValidateOptions.Bind).
func (c *Compiled) RefParams() []*RefParam { return c.RefList }

// Binds reports whether the program runs only as bound to execute's
// input: it has catalog-reference params, or fields (thresholds, holds,
// times, offsets) written as "{{ params.<name> }}", which the unbound
// program does not know. What is armed is then the bound program.
func (c *Compiled) Binds() bool { return len(c.RefList) > 0 || c.fields }

// RefParam returns the catalog-reference param name, or nil.
func (c *Compiled) RefParam(name string) *RefParam {
	for _, r := range c.RefList {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// Entry returns the referenced entry with this id as validated, or nil.
func (c *Compiled) Entry(id string) *pilotage.Entry {
	i := sort.SearchStrings(c.Refs, id)
	if i < len(c.Refs) && i < len(c.Entries) && c.Refs[i] == id {
		return c.Entries[i]
	}
	return nil
}

// CallSelectors lists the selectors of the body's calls by selector, in
// step order: what they address is known only against a catalog.
func (c *Compiled) CallSelectors() []*Selector {
	var out []*Selector
	var walk func(list []RunStep)
	walk = func(list []RunStep) {
		for i := range list {
			s := &list[i]
			if s.Kind() == StepCall && s.Flags&CallSelect != 0 {
				out = append(out, s.More.(*Selector))
			}
			for ch := range s.Children() {
				walk(ch.Steps)
			}
		}
	}
	walk(c.Steps)
	return out
}

// Calls lists the catalog ids the body calls, sorted, each once (a call
// through a catalog-reference param or a selector is left out).
func (c *Compiled) Calls() []string {
	var out []string
	var walk func(list []RunStep)
	walk = func(list []RunStep) {
		for i := range list {
			s := &list[i]
			if s.Kind() == StepCall && s.Flags&(CallParam|CallSelect) == 0 && !slices.Contains(out, s.Text) {
				out = append(out, s.Text)
			}
			for ch := range s.Children() {
				walk(ch.Steps)
			}
		}
	}
	walk(c.Steps)
	slices.Sort(out)
	return out
}
