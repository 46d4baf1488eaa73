package rules

import (
	"math"
	"sort"
	"strconv"
	"sync"
	"unsafe"

	"github.com/expr-lang/expr/vm"
)

// Compact readies a compiled program to be held for long (a promoted body,
// an installed rule): it drops the JSON Pointers (DropPointers), allocates
// each list of triggers, conditions and steps in one or two objects instead
// of one per element, and shares with every other compacted program the
// equal parts that are never written after validation: ids and labels,
// compiled expressions, templates, argument and set maps, and constant
// filter values. A house's rules repeat these ("{{ trigger.value }}",
// {"state": "ON"}), and every object a held program keeps is work for the
// collector on every cycle.
//
// The program runs, plans and traces exactly as before. Compact must be
// called before c is shared (installed, held or handed to another
// goroutine): it rewrites c in place.
func (c *Compiled) Compact() {
	if c == nil || c.Program == nil || c.compacted {
		return
	}
	c.compacted = true
	c.DropPointers()
	if len(c.Sub) == 0 {
		c.Sub = nil
	}
	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.reserve()
	p := c.Program
	p.Triggers = pack(p.Triggers)
	for _, t := range p.Triggers {
		t.ID = shared.str(t.ID)
		t.To.V = shared.value(t.To.V)
		t.From.V = shared.value(t.From.V)
		if m := t.TriggerMore; m != nil {
			m.Cron = shared.str(m.Cron)
			m.At = shared.str(m.At)
			m.Sun = shared.str(m.Sun)
		}
	}
	p.Conditions = pack(p.Conditions)
	for _, cd := range p.Conditions {
		cd.ID = shared.str(cd.ID)
		cd.Expr = shared.expr(cd.Expr)
	}
	p.Steps = shared.steps(p.Steps)
}

// maxShared bounds the sharing table. Sharing is an optimization: when
// the table is full it starts over, and programs compacted after that keep
// their own copies of what the old table held.
const maxShared = 1 << 16

// shared is the table Compact shares through.
var shared = &shareTable{}

type shareTable struct {
	mu    sync.Mutex
	n     int
	strs  map[string]string
	vals  map[valueKey]any
	exprs map[exprShareKey]*Expr
	tmpls map[tmplShareKey]*Template
	maps  map[string]map[string]*Template
}

type exprShareKey struct {
	prog   *vm.Program // one per (source, node bound): see compiledExprs
	offset int
}

// valueKey identifies a constant: nil, a string, a number (by its bits:
// -0 and 0 encode differently) or a boolean.
type valueKey struct {
	kind byte // 'n' nil, 's' string, 'f' number, 'b' boolean
	s    string
	f    uint64
}

type tmplShareKey struct {
	c valueKey // IsConst
	x *Expr    // Whole (shared)
}

func constKey(v any) (valueKey, bool) {
	switch x := v.(type) {
	case nil:
		return valueKey{kind: 'n'}, true
	case string:
		return valueKey{kind: 's', s: x}, true
	case float64:
		return valueKey{kind: 'f', f: math.Float64bits(x)}, true
	case bool:
		k := valueKey{kind: 'b'}
		if x {
			k.f = 1
		}
		return k, true
	}
	return valueKey{}, false
}

// reserve starts the table over when it is full (mu held).
func (t *shareTable) reserve() {
	if t.strs != nil && t.n < maxShared {
		return
	}
	t.n = 0
	t.strs = map[string]string{}
	t.vals = map[valueKey]any{}
	t.exprs = map[exprShareKey]*Expr{}
	t.tmpls = map[tmplShareKey]*Template{}
	t.maps = map[string]map[string]*Template{}
}

// maxSharedString bounds the strings the table keeps (ids and labels are
// at most 64 characters).
const maxSharedString = 256

func (t *shareTable) str(s string) string {
	if s == "" || len(s) > maxSharedString {
		return s
	}
	if c, ok := t.strs[s]; ok {
		return c
	}
	t.strs[s] = s
	t.n++
	return s
}

// value shares a constant scalar (a boxed string or number is an object of
// its own).
func (t *shareTable) value(v any) any {
	k, ok := constKey(v)
	if !ok || k.kind == 'n' || k.kind == 'b' || len(k.s) > maxSharedString {
		return v
	}
	if c, ok := t.vals[k]; ok {
		return c
	}
	t.vals[k] = v
	t.n++
	return v
}

func (t *shareTable) expr(x *Expr) *Expr {
	if x == nil || x.prog == nil || x.Ptr != "" {
		return x
	}
	k := exprShareKey{x.prog, x.Offset}
	if c, ok := t.exprs[k]; ok {
		return c
	}
	t.exprs[k] = x
	t.n++
	return x
}

// template returns the shared template equal to tp, and whether it is one
// (a template with mixed text, or a composite, is kept but its expressions
// are shared).
func (t *shareTable) template(tp *Template) (*Template, bool) {
	if tp == nil {
		return nil, true
	}
	if tp.Ptr != "" {
		return tp, false
	}
	var k tmplShareKey
	// A Whole or IsConst template holds nothing else (compileTemplateString,
	// constIfPure, durTemplate): equal keys are equal templates.
	plain := tp.Parts == nil && tp.Object == nil && tp.Array == nil
	switch {
	case plain && tp.IsConst:
		ck, ok := constKey(tp.Const)
		if !ok || len(ck.s) > maxSharedString {
			return tp, false
		}
		k.c = ck
	case plain && tp.Whole != nil:
		tp.Whole = t.expr(tp.Whole)
		k.x = tp.Whole
	default:
		for i := range tp.Parts {
			tp.Parts[i].Text = t.str(tp.Parts[i].Text)
			tp.Parts[i].Expr = t.expr(tp.Parts[i].Expr)
		}
		for key, sub := range tp.Object {
			tp.Object[key], _ = t.template(sub)
		}
		for i, sub := range tp.Array {
			tp.Array[i], _ = t.template(sub)
		}
		return tp, false
	}
	if c, ok := t.tmpls[k]; ok {
		return c, true
	}
	t.tmpls[k] = tp
	t.n++
	return tp, true
}

// templates shares a map of templates (call args, set variables): the map
// itself when every template in it is shared.
func (t *shareTable) templates(m map[string]*Template) map[string]*Template {
	if m == nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	all := true
	for k, tp := range m {
		var ok bool
		m[k], ok = t.template(tp)
		all = all && ok
		keys = append(keys, k)
	}
	if !all {
		return m
	}
	sort.Strings(keys)
	var b []byte
	for _, k := range keys {
		b = strconv.AppendInt(b, int64(len(k)), 10)
		b = append(b, ':')
		b = append(b, k...)
		b = strconv.AppendUint(b, uint64(tmplID(m[k])), 16)
		b = append(b, ';')
	}
	key := string(b)
	if c, ok := t.maps[key]; ok {
		return c
	}
	t.maps[key] = m
	t.n++
	return m
}

func (t *shareTable) steps(list []*Step) []*Step {
	list = pack(list)
	packMore(list)
	for _, s := range list {
		s.ID = t.str(s.ID)
		s.Args = t.templates(s.Args)
		s.Delay, _ = t.template(s.Delay)
		if s.StepMore == nil {
			continue
		}
		if w := s.Wait; w != nil {
			w.To.V = t.value(w.To.V)
			w.From.V = t.value(w.From.V)
			w.For, _ = t.template(w.For)
			w.Expr = t.expr(w.Expr)
		}
		s.If = t.expr(s.If)
		s.Then = t.steps(s.Then)
		s.Else = t.steps(s.Else)
		for _, a := range s.Choose {
			a.Label = t.str(a.Label)
			a.When = t.expr(a.When)
			a.Do = t.steps(a.Do)
		}
		s.Choose = pack(s.Choose)
		s.Default = t.steps(s.Default)
		if r := s.Repeat; r != nil {
			r.Count, _ = t.template(r.Count)
			r.ForEach, _ = t.template(r.ForEach)
			r.While = t.expr(r.While)
			r.Until = t.expr(r.Until)
		}
		s.Do = t.steps(s.Do)
		s.Set = t.templates(s.Set)
		s.Stop = t.str(s.Stop)
	}
	return list
}

// packMore reallocates the StepMore of a packed list's steps in one object
// (a list of call and delay steps has none).
func packMore(list []*Step) {
	n := 0
	for _, s := range list {
		if s.StepMore != nil {
			n++
		}
	}
	if n == 0 {
		return
	}
	more := make([]StepMore, 0, n)
	for _, s := range list {
		if s.StepMore != nil {
			more = append(more, *s.StepMore)
			s.StepMore = &more[len(more)-1]
		}
	}
}

// tmplID identifies a shared template in a map key; the table holds the
// template, so its address is not reused while the key exists.
func tmplID(tp *Template) uintptr { return uintptr(unsafe.Pointer(tp)) }

// one is a list of one element allocated with its element.
type one[T any] struct {
	list [1]*T
	v    T
}

// pack reallocates a list of pointers with its elements: one object for a
// list of one, two for longer lists, instead of one per element and one
// for the list.
func pack[T any](list []*T) []*T {
	switch len(list) {
	case 0:
		return list
	case 1:
		o := &one[T]{v: *list[0]}
		o.list[0] = &o.v
		return o.list[:]
	}
	vals := make([]T, len(list))
	out := make([]*T, len(list))
	for i, p := range list {
		vals[i] = *p
		out[i] = &vals[i]
	}
	return out
}
