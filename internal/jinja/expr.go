package jinja

import (
	"fmt"
)

// --- expressions ---

type jlit struct{ v any }

func (l *jlit) eval(s *jstate) (any, error) { return l.v, s.spend(1) }

type jname struct{ n string }

func (n *jname) eval(s *jstate) (any, error) { return s.lookup(n.n), s.spend(1) }

type jattr struct {
	x    jexpr
	name string
}

func (a *jattr) eval(s *jstate) (any, error) {
	v, err := a.x.eval(s)
	if err != nil {
		return nil, err
	}
	return getAttr(v, a.name)
}

type jitem struct{ x, key jexpr }

func (it *jitem) eval(s *jstate) (any, error) {
	v, err := it.x.eval(s)
	if err != nil {
		return nil, err
	}
	k, err := it.key.eval(s)
	if err != nil {
		return nil, err
	}
	return getItem(v, k)
}

type jslice struct{ x, lo, hi, step jexpr }

func (sl *jslice) eval(s *jstate) (any, error) {
	v, err := sl.x.eval(s)
	if err != nil {
		return nil, err
	}
	var b [3]any
	for i, e := range []jexpr{sl.lo, sl.hi, sl.step} {
		if e == nil {
			continue
		}
		if b[i], err = e.eval(s); err != nil {
			return nil, err
		}
	}
	return slice(s, v, b[0], b[1], b[2])
}

type jlist struct {
	items []jexpr
	tuple bool
}

func (l *jlist) eval(s *jstate) (any, error) {
	out := make([]any, len(l.items))
	for i, x := range l.items {
		v, err := x.eval(s)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	if l.tuple {
		return jtuple(out), nil
	}
	return out, nil
}

type jdictLit struct{ keys, vals []jexpr }

func (d *jdictLit) eval(s *jstate) (any, error) {
	out := &jdict{}
	for i := range d.keys {
		k, err := d.keys[i].eval(s)
		if err != nil {
			return nil, err
		}
		v, err := d.vals[i].eval(s)
		if err != nil {
			return nil, err
		}
		out.put(k, v)
	}
	return out, nil
}

type jcond struct{ then, cond, els jexpr }

func (c *jcond) eval(s *jstate) (any, error) {
	v, err := c.cond.eval(s)
	if err != nil {
		return nil, err
	}
	if truthy(v) {
		return c.then.eval(s)
	}
	if c.els == nil {
		return jUndef{name: "else"}, nil
	}
	return c.els.eval(s)
}

type jlogic struct {
	or   bool
	l, r jexpr
}

func (l *jlogic) eval(s *jstate) (any, error) {
	v, err := l.l.eval(s)
	if err != nil || truthy(v) == l.or {
		return v, err
	}
	return l.r.eval(s)
}

type junary struct {
	op string
	x  jexpr
}

func (u *junary) eval(s *jstate) (any, error) {
	v, err := u.x.eval(s)
	if err != nil {
		return nil, err
	}
	switch u.op {
	case "not":
		return !truthy(v), nil
	case "-":
		switch n := num(v).(type) {
		case int:
			return -n, nil
		case float64:
			return -n, nil
		}
	case "+":
		if n := num(v); isNumber(n) {
			return n, nil
		}
	}
	return nil, fmt.Errorf("bad operand for unary %s: %s", u.op, pyType(v))
}

type jbin struct {
	op   string
	l, r jexpr
}

func (b *jbin) eval(s *jstate) (any, error) {
	l, err := b.l.eval(s)
	if err != nil {
		return nil, err
	}
	r, err := b.r.eval(s)
	if err != nil {
		return nil, err
	}
	return binaryOp(s, b.op, l, r)
}

type jcmp struct {
	first jexpr
	ops   []string
	rest  []jexpr
}

func (c *jcmp) eval(s *jstate) (any, error) {
	l, err := c.first.eval(s)
	if err != nil {
		return nil, err
	}
	for i, op := range c.ops {
		r, err := c.rest[i].eval(s)
		if err != nil {
			return nil, err
		}
		ok, err := compare(op, l, r)
		if err != nil || !ok {
			return false, err
		}
		l = r
	}
	return true, nil
}

// jfunc is a global function, filter or method body: args are evaluated.
type jfunc func(s *jstate, args []any, kw map[string]any) (any, error)

type jcall struct {
	name string
	fn   jfunc
	args []jexpr
	kws  []jkw
}

func (c *jcall) eval(s *jstate) (any, error) {
	args, kw, err := evalArgs(s, nil, c.args, c.kws)
	if err != nil {
		return nil, err
	}
	return c.fn(s, args, kw)
}

type jmethod struct {
	x    jexpr
	name string
	args []jexpr
	kws  []jkw
}

func (m *jmethod) eval(s *jstate) (any, error) {
	self, err := m.x.eval(s)
	if err != nil {
		return nil, err
	}
	args, kw, err := evalArgs(s, []any{self}, m.args, m.kws)
	if err != nil {
		return nil, err
	}
	return jMethods[m.name](s, args, kw)
}

type jfilter struct {
	name string
	fn   jfunc
	x    jexpr
	args []jexpr
	kws  []jkw
}

func (f *jfilter) eval(s *jstate) (any, error) {
	v, err := f.x.eval(s)
	if err != nil {
		return nil, err
	}
	args, kw, err := evalArgs(s, []any{v}, f.args, f.kws)
	if err != nil {
		return nil, err
	}
	out, err := f.fn(s, args, kw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.name, err)
	}
	return out, nil
}

type jtest struct {
	name string
	fn   jfunc
	neg  bool
	x    jexpr
	args []jexpr
}

func (t *jtest) eval(s *jstate) (any, error) {
	v, err := t.x.eval(s)
	if err != nil {
		return nil, err
	}
	args, _, err := evalArgs(s, []any{v}, t.args, nil)
	if err != nil {
		return nil, err
	}
	r, err := t.fn(s, args, nil)
	if err != nil {
		return nil, fmt.Errorf("test %s: %w", t.name, err)
	}
	return truthy(r) != t.neg, nil
}

// evalArgs evaluates call arguments after the given leading ones.
func evalArgs(s *jstate, lead []any, xs []jexpr, kws []jkw) ([]any, map[string]any, error) {
	if err := s.spend(1 + len(xs) + len(kws)); err != nil {
		return nil, nil, err
	}
	args := append(make([]any, 0, len(lead)+len(xs)), lead...)
	for _, x := range xs {
		v, err := x.eval(s)
		if err != nil {
			return nil, nil, err
		}
		args = append(args, v)
	}
	var kw map[string]any
	for _, k := range kws {
		v, err := k.x.eval(s)
		if err != nil {
			return nil, nil, err
		}
		if kw == nil {
			kw = map[string]any{}
		}
		kw[k.name] = v
	}
	return args, kw, nil
}
