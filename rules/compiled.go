package rules

import (
	"encoding/json"
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

// Compiled is a validated program, ready to plan, install and run. It is
// produced once by Validate and shared read-only afterwards.
type Compiled struct {
	Program *Program
	Raw     json.RawMessage // the canonical program JSON it was decoded from
	Plan    *pilotage.Plan
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

	compacted bool // Compact ran
}

// Entry returns the referenced entry with this id as validated, or nil.
func (c *Compiled) Entry(id string) *pilotage.Entry {
	i := sort.SearchStrings(c.Refs, id)
	if i < len(c.Refs) && i < len(c.Entries) && c.Refs[i] == id {
		return c.Entries[i]
	}
	return nil
}

// DropPointers clears the JSON Pointers a compiled program keeps for
// diagnostics. A promoted body is never diagnosed again (a stored program
// is re-validated from its JSON), and an installed house holds thousands
// of them: each pointer is one more object for the collector to trace.
// The program runs exactly as before.
func (c *Compiled) DropPointers() {
	if c == nil || c.Program == nil {
		return
	}
	p := c.Program
	for _, t := range p.Triggers {
		t.Ptr = ""
	}
	for _, cond := range p.Conditions {
		cond.Ptr = ""
		cond.Expr.dropPointer()
	}
	dropStepPointers(p.Steps)
}

func dropStepPointers(steps []*Step) {
	for _, s := range steps {
		s.Ptr = ""
		for _, a := range s.Args {
			a.dropPointers()
		}
		s.Delay.dropPointers()
		if s.StepMore == nil {
			continue
		}
		for _, t := range s.Set {
			t.dropPointers()
		}
		if w := s.Wait; w != nil {
			w.Ptr = ""
			w.For.dropPointers()
			w.Expr.dropPointer()
		}
		s.If.dropPointer()
		if r := s.Repeat; r != nil {
			r.Ptr = ""
			r.Count.dropPointers()
			r.ForEach.dropPointers()
			r.While.dropPointer()
			r.Until.dropPointer()
		}
		for _, arm := range s.Choose {
			arm.Ptr = ""
			arm.When.dropPointer()
			dropStepPointers(arm.Do)
		}
		dropStepPointers(s.Then)
		dropStepPointers(s.Else)
		dropStepPointers(s.Default)
		dropStepPointers(s.Do)
	}
}

func (x *Expr) dropPointer() {
	if x != nil {
		x.Ptr = ""
	}
}

func (t *Template) dropPointers() {
	if t == nil {
		return
	}
	t.Ptr = ""
	t.Whole.dropPointer()
	for i := range t.Parts {
		t.Parts[i].Expr.dropPointer()
	}
	for _, sub := range t.Object {
		sub.dropPointers()
	}
	for _, sub := range t.Array {
		sub.dropPointers()
	}
}
