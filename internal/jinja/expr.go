package jinja

import (
	"fmt"
)

// --- expressions ---

type literal struct{ v any }

func (l *literal) eval(s *state) (any, error) { return l.v, s.spend(1) }

type varRef struct{ n string }

func (n *varRef) eval(s *state) (any, error) { return s.lookup(n.n), s.spend(1) }

type attrExpr struct {
	x    expr
	name string
}

func (a *attrExpr) eval(s *state) (any, error) {
	v, err := a.x.eval(s)
	if err != nil {
		return nil, err
	}
	return getAttr(s, v, a.name)
}

type itemExpr struct{ x, key expr }

func (it *itemExpr) eval(s *state) (any, error) {
	v, err := it.x.eval(s)
	if err != nil {
		return nil, err
	}
	k, err := it.key.eval(s)
	if err != nil {
		return nil, err
	}
	return getItem(s, v, k)
}

type sliceExpr struct{ x, lo, hi, step expr }

func (sl *sliceExpr) eval(s *state) (any, error) {
	v, err := sl.x.eval(s)
	if err != nil {
		return nil, err
	}
	var b [3]any
	for i, e := range []expr{sl.lo, sl.hi, sl.step} {
		if e == nil {
			continue
		}
		if b[i], err = e.eval(s); err != nil {
			return nil, err
		}
	}
	return slice(s, v, b[0], b[1], b[2])
}

type listExpr struct {
	items []expr
	tuple bool
}

func (l *listExpr) eval(s *state) (any, error) {
	if err := s.spendItems(len(l.items)); err != nil {
		return nil, err
	}
	out := make([]any, len(l.items))
	for i, x := range l.items {
		v, err := x.eval(s)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	if l.tuple {
		return tuple(out), nil
	}
	return out, nil
}

type dictExpr struct{ keys, vals []expr }

func (d *dictExpr) eval(s *state) (any, error) {
	out := &dict{}
	for i := range d.keys {
		k, err := d.keys[i].eval(s)
		if err != nil {
			return nil, err
		}
		v, err := d.vals[i].eval(s)
		if err != nil {
			return nil, err
		}
		if err := out.put(s, k, v); err != nil {
			return nil, err
		}
	}
	return out, nil
}

type condExpr struct{ then, cond, els expr }

func (c *condExpr) eval(s *state) (any, error) {
	v, err := c.cond.eval(s)
	if err != nil {
		return nil, err
	}
	if truthy(v) {
		return c.then.eval(s)
	}
	if c.els == nil {
		return undefinedValue{name: "else"}, nil
	}
	return c.els.eval(s)
}

type logicExpr struct {
	or   bool
	l, r expr
}

func (l *logicExpr) eval(s *state) (any, error) {
	v, err := l.l.eval(s)
	if err != nil || truthy(v) == l.or {
		return v, err
	}
	return l.r.eval(s)
}

type unaryExpr struct {
	op string
	x  expr
}

func (u *unaryExpr) eval(s *state) (any, error) {
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

type binExpr struct {
	op   string
	l, r expr
}

func (b *binExpr) eval(s *state) (any, error) {
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

type cmpExpr struct {
	first expr
	ops   []string
	rest  []expr
}

func (c *cmpExpr) eval(s *state) (any, error) {
	l, err := c.first.eval(s)
	if err != nil {
		return nil, err
	}
	for i, op := range c.ops {
		r, err := c.rest[i].eval(s)
		if err != nil {
			return nil, err
		}
		ok, err := s.compare(op, l, r)
		if err != nil || !ok {
			return false, err
		}
		l = r
	}
	return true, nil
}

// builtin is a global function, filter or method body: args are evaluated.
type builtin func(s *state, args []any, kw map[string]any) (any, error)

type callExpr struct {
	name string
	fn   builtin
	args []expr
	kws  []kwarg
}

func (c *callExpr) eval(s *state) (any, error) {
	args, kw, err := evalArgs(s, nil, c.args, c.kws)
	if err != nil {
		return nil, err
	}
	return c.fn(s, args, kw)
}

type methodExpr struct {
	x    expr
	name string
	args []expr
	kws  []kwarg
}

func (m *methodExpr) eval(s *state) (any, error) {
	self, err := m.x.eval(s)
	if err != nil {
		return nil, err
	}
	args, kw, err := evalArgs(s, []any{self}, m.args, m.kws)
	if err != nil {
		return nil, err
	}
	return methods[m.name](s, args, kw)
}

type filterExpr struct {
	name string
	fn   builtin
	x    expr
	args []expr
	kws  []kwarg
}

func (f *filterExpr) eval(s *state) (any, error) {
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

type testExpr struct {
	name string
	fn   builtin
	neg  bool
	x    expr
	args []expr
}

func (t *testExpr) eval(s *state) (any, error) {
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
func evalArgs(s *state, lead []any, xs []expr, kws []kwarg) ([]any, map[string]any, error) {
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
