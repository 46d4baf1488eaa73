package model

import (
	"fmt"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/rules/internal/core"
)

// Template is a program value that may embed expressions: a whole-string
// "{{ expr }}" keeps the expression's type; mixed text interpolates to a
// string; objects and arrays are templates element-wise; anything else is a
// constant.
type Template struct {
	Ptr   string
	Const any // used when no expression is involved (IsConst)

	IsConst bool
	Whole   *Expr          // "{{ expr }}" alone
	Parts   []TemplatePart // mixed text
	Object  map[string]*Template
	Array   []*Template
}

// TemplatePart is literal text or an expression inside a mixed string.
type TemplatePart struct {
	Text string
	Expr *Expr
}

// Exprs lists every expression inside t (for validation passes).
func (t *Template) Exprs() []*Expr {
	if t == nil {
		return nil
	}
	var out []*Expr
	if t.Whole != nil {
		out = append(out, t.Whole)
	}
	for _, p := range t.Parts {
		if p.Expr != nil {
			out = append(out, p.Expr)
		}
	}
	for _, k := range core.SortedKeys(t.Object) {
		out = append(out, t.Object[k].Exprs()...)
	}
	for _, a := range t.Array {
		out = append(out, a.Exprs()...)
	}
	return out
}

// Eval computes the template's value, as one evaluation: the
// expressions inside share its byte and operation budgets, and an object
// or list is measured member by member as it is built, so that a large
// one is refused before it is whole.
func (t *Template) Eval(env *Env) (any, error) {
	env.beginEval()
	out, err := t.eval(env)
	env.endEval()
	return out, err
}

func (t *Template) eval(env *Env) (any, error) {
	switch {
	case t == nil:
		return nil, nil
	case t.IsConst:
		return t.Const, nil
	case t.Whole != nil:
		return t.Whole.run(env)
	case t.Parts != nil:
		return t.evalParts(env)
	case t.Object != nil:
		out := make(map[string]any, len(t.Object))
		size := 2
		for k, sub := range t.Object {
			v, err := sub.eval(env)
			if err == nil {
				size += core.JSONStringLen(k) + 2
				err = t.grow(env, &size, v)
			}
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case t.Array != nil:
		out := make([]any, len(t.Array))
		size := 2
		for i, sub := range t.Array {
			v, err := sub.eval(env)
			if err == nil {
				size++
				err = t.grow(env, &size, v)
			}
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return t.Const, nil
}

// grow adds a member's encoded size to size, what the object or list
// being built measures so far: past MaxValueBytes it is not finished.
func (t *Template) grow(env *Env, size *int, v any) error {
	m := &env.mem
	if err := m.tick("a template", 1); err != nil {
		return err
	}
	rest := m.value - *size
	s := core.Measure(v, rest, false)
	*size += s.Bytes
	if s.Over(rest) {
		what := "the list this template builds"
		if t.Object != nil {
			what = "the object this template builds"
		}
		return overLimit(what, core.ValueSize{Bytes: *size, Deep: s.Deep}, m.value)
	}
	return nil
}

// evalParts interpolates mixed text, the result bounded like any value.
func (t *Template) evalParts(env *Env) (any, error) {
	var b strings.Builder
	limit := env.valueBytes()
	for _, p := range t.Parts {
		s := p.Text
		if p.Expr != nil {
			v, err := p.Expr.run(env)
			if err != nil {
				return nil, err
			}
			s = formatValue(v)
		}
		if n := b.Len() + len(s); n > limit {
			return nil, fmt.Errorf("text %q: %w", t.source(), &LimitError{What: "the interpolated text", Bytes: n, Limit: "MaxValueBytes", Max: limit})
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// source is the mixed text as written (for messages), shortened.
func (t *Template) source() string {
	var b strings.Builder
	for _, p := range t.Parts {
		if p.Expr != nil {
			b.WriteString("{{ " + p.Expr.Src + " }}")
		} else {
			b.WriteString(p.Text)
		}
		if b.Len() > 80 {
			return strings.ToValidUTF8(b.String()[:80], "") + "…"
		}
	}
	return b.String()
}

func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case time.Time:
		return x.Format(time.RFC3339)
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprintf("%d", int64(x))
		}
	}
	return fmt.Sprint(v)
}
