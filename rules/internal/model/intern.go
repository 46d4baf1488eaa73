package model

import (
	"math"
	"strconv"

	"github.com/robfig/cron/v3"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
)

// Interner makes the values a run form holds: copies without the JSON
// Pointers and offsets diagnostics need, and equal ones shared with every
// program lowered through the same Cache (nil: nothing is shared). A
// house's rules repeat ids, expressions ("{{ trigger.value }}"), argument
// lists and constants ({"state": "ON"}), and every object a held program
// keeps is work for the collector on every cycle.
type Interner struct {
	Cache *Cache
	// Entry returns a referenced catalog entry (nil if none): a catalog
	// id is the entry's own copy, which the program holds anyway.
	Entry func(id string) *pilotage.Entry
}

// shareKey names a part held programs share: its kind (the share*
// constants) and its content: of says what s and f hold (a constant's
// type, 'n' 's' 'f' 'b', or 'x' an expression's source).
type shareKey struct {
	kind, of byte
	s        string
	f        uint64
}

// Kinds of shared parts.
const (
	shareText  = 's' // a short text: an id, a label, a reason
	shareValue = 'V' // a constant string or number (a filter value)
	shareExpr  = 'x' // an expression, by its source
	shareTmpl  = 't' // a template: a constant scalar or one whole expression
	shareDur   = 'd' // a duration spec, by its template's key
	shareVals  = 'v' // a list of named templates, by names and template keys
	shareSched = 'c' // a schedule, by its spec
)

// maxSharedString bounds the texts the table keeps (ids and labels are
// at most 64 characters).
const maxSharedString = 256

// shared returns the part held under key, making it with make when there
// is none.
func shared[T any](in *Interner, key shareKey, build func() T) T {
	if in.Cache == nil {
		return build()
	}
	v, ok := in.Cache.shared.get(key)
	if !ok {
		v = in.Cache.shared.add(key, build(), nil)
	}
	t, _ := v.(T) // a nil interface (a schedule that did not parse) is T's zero
	return t
}

func (in *Interner) str(s string) string {
	if s == "" || len(s) > maxSharedString {
		return s
	}
	return shared(in, shareKey{kind: shareText, s: s}, func() string { return s })
}

// id is a catalog id: the referenced entry's own copy when there is one.
func (in *Interner) id(s string) string {
	if e := in.Entry(s); e != nil && e.ID == s {
		return e.ID
	}
	return in.str(s)
}

// constKey is the key of a constant scalar: nil, a string, a number or a
// boolean (ok false for anything else, or a long string).
// A number is keyed by its bits: -0 and 0 differ.
func constKey(v any) (shareKey, bool) {
	switch x := v.(type) {
	case nil:
		return shareKey{of: 'n'}, true
	case string:
		return shareKey{of: 's', s: x}, len(x) <= maxSharedString
	case float64:
		return shareKey{of: 'f', f: math.Float64bits(x)}, true
	case bool:
		k := shareKey{of: 'b'}
		if x {
			k.f = 1
		}
		return k, true
	}
	return shareKey{}, false
}

// value shares a constant string or number (a boxed one is an object of
// its own; nil and booleans are not).
func (in *Interner) value(v any) any {
	k, ok := constKey(v)
	if !ok || (k.of != 's' && k.of != 'f') {
		return v
	}
	k.kind = shareValue
	return shared(in, k, func() any { return v })
}

func (in *Interner) expr(x *Expr) *Expr {
	if x == nil {
		return nil
	}
	return shared(in, shareKey{kind: shareExpr, s: x.Src}, func() *Expr {
		return &Expr{Src: x.Src, Refs: x.Refs, Sels: x.Sels, prog: x.prog, reach: x.reach, Paths: x.Paths, Omitted: x.Omitted}
	})
}

// tmplKey is the key of a template that is shared whole: a constant
// scalar, or one whole expression.
func tmplKey(t *Template) (shareKey, bool) {
	plain := t.Parts == nil && t.Object == nil && t.Array == nil
	switch {
	case plain && t.IsConst:
		k, ok := constKey(t.Const)
		k.kind = shareTmpl
		return k, ok
	case plain && t.Whole != nil:
		return shareKey{kind: shareTmpl, of: 'x', s: t.Whole.Src}, true
	}
	return shareKey{}, false
}

func (in *Interner) template(t *Template) *Template {
	if t == nil {
		return nil
	}
	if k, ok := tmplKey(t); ok {
		return shared(in, k, func() *Template {
			return &Template{IsConst: t.IsConst, Const: in.value(t.Const), Whole: in.expr(t.Whole)}
		})
	}
	// Mixed text and composites are kept, their parts shared.
	out := &Template{IsConst: t.IsConst, Const: t.Const}
	if t.Parts != nil {
		out.Parts = make([]TemplatePart, len(t.Parts))
		for i, p := range t.Parts {
			out.Parts[i] = TemplatePart{Text: in.str(p.Text), Expr: in.expr(p.Expr)}
		}
	}
	if t.Object != nil {
		out.Object = make(map[string]*Template, len(t.Object))
		for k, sub := range t.Object {
			out.Object[k] = in.template(sub)
		}
	}
	if t.Array != nil {
		out.Array = make([]*Template, len(t.Array))
		for i, sub := range t.Array {
			out.Array[i] = in.template(sub)
		}
	}
	return out
}

// vals lowers a call's arguments or a set step's values: sorted by name,
// the list shared when each of its templates is.
func (in *Interner) vals(m map[string]*Template) []NamedTemplate {
	if m == nil {
		return nil
	}
	names := core.SortedKeys(m)
	build := func() []NamedTemplate {
		out := make([]NamedTemplate, len(names))
		for i, name := range names {
			out[i] = NamedTemplate{in.str(name), in.template(m[name])}
		}
		return out
	}
	var key []byte
	for _, name := range names {
		t := m[name]
		if t == nil {
			return build()
		}
		k, ok := tmplKey(t)
		if !ok {
			return build()
		}
		key = strconv.AppendInt(key, int64(len(name)), 10)
		key = append(append(append(append(key, ':'), name...), k.of), k.s...)
		key = strconv.AppendUint(append(key, ':'), k.f, 16)
		key = append(key, ';')
	}
	return shared(in, shareKey{kind: shareVals, s: string(key)}, build)
}

// dur lowers a duration that may be templated, parsing a constant one
// once. One that does not parse is left to fail when run, as it did.
func (in *Interner) dur(t *Template) *DurSpec {
	build := func() *DurSpec {
		d := &DurSpec{Tmpl: in.template(t)}
		if t != nil && t.IsConst {
			if v, err := clock.DurationValue(t.Const); err == nil {
				d.Dur, d.Constant = v, true
			}
		}
		return d
	}
	if t == nil {
		return build()
	}
	k, ok := tmplKey(t)
	if !ok {
		return build()
	}
	k.kind = shareDur
	return shared(in, k, build)
}

// schedule shares a parsed schedule (immutable: Next only reads it),
// parsing spec when the decoder did not (a program built by hand).
func (in *Interner) schedule(spec string, s cron.Schedule) cron.Schedule {
	return shared(in, shareKey{kind: shareSched, s: spec}, func() cron.Schedule {
		if s == nil {
			s, _ = clock.ParseCron(spec)
		}
		return s
	})
}
