package jinja

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The evaluation of a parsed template. Every node costs budget, and so
// does every byte or item a string or list operation makes; a template
// that runs out fails instead of running on, and no value grows beyond
// maxJValue. Templates come from whoever may publish discovery.

// jBudget is the work one rendering may do (nodes evaluated plus bytes and
// items made); maxJValue bounds a string or list, and the output. Real
// templates (devices/testdata, the captures in mqtt-real) spend at most
// 12. msgJBudget is the work all the renderings one message triggers may
// do together (each costs at least jRouteCost): 1,000 discovery configs
// sharing one state topic, each looping within jBudget (2^18 then), made
// every 10-byte message cost ~1 s of CPU. Renderings past it are skipped
// (errMsgBudget): their states keep their values, and Refusals counts
// them.
const (
	jBudget    = 1 << 16
	msgJBudget = 1 << 20
	jRouteCost = 16
	maxJValue  = 64 << 10
)

var (
	errJBudget = errors.New("template needs too much work")
	// errMsgBudget: the message's work budget (msgJBudget) is spent.
	errMsgBudget = errors.New("template not rendered: the renderings of this message used up its work budget")
	errJSize     = fmt.Errorf("template value longer than %d", maxJValue)
	errBreak     = errors.New("break")
	errCont      = errors.New("continue")
)

type jexpr interface {
	eval(s *jstate) (any, error)
}

type jstmt interface {
	exec(s *jstate) error
}

type jkw struct {
	name string
	x    jexpr
}

// jprogram is a compiled template.
type jprogram struct {
	body     []jstmt
	single   jexpr // the template is one {{ expression }}
	usesJSON bool
	regex    *regexCache
}

// jstate is one rendering.
type jstate struct {
	budget  int
	out     []byte
	value   any            // the payload (value templates) or the command value
	json    any            // value_json, jUndef when the payload is not JSON
	vars    map[string]any // command template variables (position, …)
	scopes  []map[string]any
	undef   bool // an undefined value was printed
	program *jprogram
	now     time.Time // now(): the message's time
}

func (s *jstate) spend(n int) error {
	s.budget -= n
	if s.budget < 0 {
		return errJBudget
	}
	return nil
}

// spendValue charges for a made string or list and bounds its size.
func (s *jstate) spendValue(n int) error {
	if n > maxJValue {
		return errJSize
	}
	return s.spend(n/16 + 1)
}

func (s *jstate) lookup(n string) any {
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
	return jUndef{name: n}
}

func (s *jstate) set(n string, v any) {
	if len(s.scopes) == 0 {
		s.scopes = append(s.scopes, map[string]any{})
	}
	s.scopes[len(s.scopes)-1][n] = v
}

// run renders the program's statements.
func (s *jstate) run(body []jstmt) error {
	for _, st := range body {
		if err := st.exec(s); err != nil {
			return err
		}
	}
	return nil
}

// --- statements ---

type jtext struct{ s string }

func (t *jtext) exec(s *jstate) error { return s.write(t.s) }

func (s *jstate) write(str string) error {
	if len(s.out)+len(str) > maxJValue {
		return errJSize
	}
	if err := s.spend(len(str)/16 + 1); err != nil {
		return err
	}
	s.out = append(s.out, str...)
	return nil
}

type jprint struct{ x jexpr }

func (p *jprint) exec(s *jstate) error {
	v, err := p.x.eval(s)
	if err != nil {
		return err
	}
	if _, ok := v.(jUndef); ok {
		s.undef = true
		return nil
	}
	return s.write(pyStr(v))
}

type jif struct {
	conds  []jexpr
	bodies [][]jstmt
	els    []jstmt
}

func (st *jif) exec(s *jstate) error {
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

type jset struct {
	name, attr string
	x          jexpr
}

func (st *jset) exec(s *jstate) error {
	v, err := st.x.eval(s)
	if err != nil {
		return err
	}
	if st.attr == "" {
		s.set(st.name, v)
		return nil
	}
	ns, ok := s.lookup(st.name).(*jnamespace)
	if !ok {
		return fmt.Errorf("cannot set %s.%s: %s is not a namespace", st.name, st.attr, st.name)
	}
	ns.m[st.attr] = v
	return nil
}

type jloopCtl struct{ brk bool }

func (st *jloopCtl) exec(*jstate) error {
	if st.brk {
		return errBreak
	}
	return errCont
}

type jfor struct {
	vars       []string
	iter, cond jexpr
	body, els  []jstmt
}

func (st *jfor) exec(s *jstate) error {
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
	loop := &jloop{n: len(items)}
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

func (st *jfor) bind(s *jstate, it any) error {
	if len(st.vars) == 1 {
		s.set(st.vars[0], it)
		return nil
	}
	parts, err := iterate(s, it)
	if err != nil || len(parts) != len(st.vars) {
		return fmt.Errorf("cannot unpack %s into %d names", pyRepr(it), len(st.vars))
	}
	for i, n := range st.vars {
		s.set(n, parts[i])
	}
	return nil
}

// jloop is the loop variable of a for.
type jloop struct{ i, n int }

func (l *jloop) attr(name string) (any, bool) {
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

// jnamespace is namespace(): the one value a template may change.
type jnamespace struct{ m map[string]any }

// render runs the program within budget (at most jBudget); the output is
// stripped as Home Assistant does. A panic (a bug: templates are
// untrusted) is an error, not a crash.
func (p *jprogram) render(s *jstate, budget int) (out string, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = "", fmt.Errorf("template failed: %v", r)
		}
	}()
	s.budget, s.program = budget, p
	if p.single != nil { // one expression: no output buffer
		v, err := p.single.eval(s)
		if err != nil {
			return "", err
		}
		if _, ok := v.(jUndef); ok {
			s.undef = true
			return "", nil
		}
		if str, ok := v.(string); ok {
			return strings.TrimSpace(str), nil
		}
		return strings.TrimSpace(pyStr(v)), nil
	}
	if err := s.run(p.body); err != nil && err != errBreak && err != errCont {
		return "", err
	}
	return strings.TrimSpace(string(s.out)), nil
}
