package jinja

import (
	"errors"
	"fmt"
	"time"
)

// The evaluation of a parsed template: every node charges its state's
// budget before it works (see the package comment).

var (
	errBreak = errors.New("break")
	errCont  = errors.New("continue")
)

type expr interface {
	eval(s *state) (any, error)
}

type stmt interface {
	exec(s *state) error
}

type kwarg struct {
	name string
	x    expr
}

// Template is a compiled template: immutable but for its pattern cache,
// so renderings of it may run at once.
type Template struct {
	body     []stmt
	single   expr // the template is one {{ expression }}
	usesJSON bool
	regex    *regexCache
}

// state is one rendering.
type state struct {
	budget  int
	out     []byte
	value   any            // the payload (value templates) or the command value
	json    any            // value_json, undefinedValue when the payload is not JSON
	vars    map[string]any // command template variables (position, …)
	scopes  []map[string]any
	undef   bool // an undefined value was printed
	program *Template
	now     time.Time // now(): the message's time
}

func (s *state) spend(n int) error {
	s.budget -= max(n, 0)
	if s.budget < 0 {
		return ErrBudget
	}
	return nil
}

// spendBytes charges for n bytes made or scanned and bounds a string's
// size; callers charge before they make.
func (s *state) spendBytes(n int) error {
	if n > MaxValue {
		return ErrSize
	}
	return s.spend(n/BytesPerUnit + 1)
}

// spendItems charges for n list items made or visited and bounds a list's
// size.
func (s *state) spendItems(n int) error {
	if n > MaxValue {
		return ErrSize
	}
	return s.spend(n + 1)
}

func (s *state) lookup(n string) any {
	for i := len(s.scopes) - 1; i >= 0; i-- {
		if v, ok := s.scopes[i][n]; ok {
			return v
		}
	}
	switch n {
	case "value":
		return s.value
	case "value_json":
		return s.json
	}
	if v, ok := s.vars[n]; ok {
		return v
	}
	return undefinedValue{name: n}
}

func (s *state) set(n string, v any) {
	if len(s.scopes) == 0 {
		s.scopes = append(s.scopes, map[string]any{})
	}
	s.scopes[len(s.scopes)-1][n] = v
}

// run renders the program's statements.
func (s *state) run(body []stmt) error {
	for _, st := range body {
		if err := st.exec(s); err != nil {
			return err
		}
	}
	return nil
}

// --- statements ---

type textStmt struct{ s string }

func (t *textStmt) exec(s *state) error { return s.write(t.s) }

func (s *state) write(str string) error {
	if len(s.out)+len(str) > MaxValue {
		return ErrSize
	}
	if err := s.spendBytes(len(str)); err != nil {
		return err
	}
	s.out = append(s.out, str...)
	return nil
}

type printStmt struct{ x expr }

func (p *printStmt) exec(s *state) error {
	v, err := p.x.eval(s)
	if err != nil {
		return err
	}
	if _, ok := v.(undefinedValue); ok {
		s.undef = true
		return nil
	}
	str, err := s.str(v)
	if err != nil {
		return err
	}
	return s.write(str)
}

type ifStmt struct {
	conds  []expr
	bodies [][]stmt
	els    []stmt
}

func (st *ifStmt) exec(s *state) error {
	for i, c := range st.conds {
		v, err := c.eval(s)
		if err != nil {
			return err
		}
		if truthy(v) {
			return s.run(st.bodies[i])
		}
	}
	return s.run(st.els)
}

type setStmt struct {
	name, attr string
	x          expr
}

func (st *setStmt) exec(s *state) error {
	v, err := st.x.eval(s)
	if err != nil {
		return err
	}
	if st.attr == "" {
		s.set(st.name, v)
		return nil
	}
	ns, ok := s.lookup(st.name).(*namespace)
	if !ok {
		return fmt.Errorf("cannot set %s.%s: %s is not a namespace", st.name, st.attr, st.name)
	}
	ns.m[st.attr] = v
	return nil
}

type loopCtl struct{ brk bool }

func (st *loopCtl) exec(*state) error {
	if st.brk {
		return errBreak
	}
	return errCont
}

type forStmt struct {
	vars       []string
	iter, cond expr
	body, els  []stmt
}

func (st *forStmt) exec(s *state) error {
	v, err := st.iter.eval(s)
	if err != nil {
		return err
	}
	items, err := iterate(s, v)
	if err != nil {
		return err
	}
	s.scopes = append(s.scopes, map[string]any{})
	defer func() { s.scopes = s.scopes[:len(s.scopes)-1] }()
	ran := false
	loop := &loopVar{n: len(items)}
	for i, it := range items {
		if err := s.spend(1); err != nil {
			return err
		}
		if err := st.bind(s, it); err != nil {
			return err
		}
		loop.i = i
		s.set("loop", loop)
		if st.cond != nil {
			c, err := st.cond.eval(s)
			if err != nil {
				return err
			}
			if !truthy(c) {
				continue
			}
		}
		ran = true
		err := s.run(st.body)
		if err == errBreak {
			break
		}
		if err != nil && err != errCont {
			return err
		}
	}
	if !ran {
		return s.run(st.els)
	}
	return nil
}

func (st *forStmt) bind(s *state, it any) error {
	if len(st.vars) == 1 {
		s.set(st.vars[0], it)
		return nil
	}
	parts, err := iterate(s, it)
	if err != nil || len(parts) != len(st.vars) {
		return fmt.Errorf("cannot unpack %s into %d names", brief(it), len(st.vars))
	}
	for i, n := range st.vars {
		s.set(n, parts[i])
	}
	return nil
}

// loopVar is the loop variable of a for.
type loopVar struct{ i, n int }

func (l *loopVar) attr(name string) (any, bool) {
	switch name {
	case "index":
		return l.i + 1, true
	case "index0":
		return l.i, true
	case "revindex":
		return l.n - l.i, true
	case "revindex0":
		return l.n - l.i - 1, true
	case "first":
		return l.i == 0, true
	case "last":
		return l.i == l.n-1, true
	case "length":
		return l.n, true
	}
	return nil, false
}

// namespace is namespace(): the one value a template may change.
type namespace struct{ m map[string]any }

// render runs the program; the caller strips the output.
func (p *Template) render(s *state) (string, error) {
	if p.single != nil { // one expression: no output buffer
		v, err := p.single.eval(s)
		if err != nil {
			return "", err
		}
		if _, ok := v.(undefinedValue); ok {
			s.undef = true
			return "", nil
		}
		return s.str(v)
	}
	if err := s.run(p.body); err != nil && err != errBreak && err != errCont {
		return "", err
	}
	return string(s.out), nil
}
