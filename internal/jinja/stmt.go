package jinja

import (
	"errors"
	"fmt"
	"strings"
)

// --- statements ---

// jcompiler turns pieces into a statement tree and checks every filter,
// test, function and method it names.
type jcompiler struct {
	pieces []jpiece
	i      int
	depth  int
	loops  int
	usesJS bool            // the template reads value_json
	vars   map[string]bool // names set or bound by loops
	regex  *regexCache
}

func (c *jcompiler) parseExpr(src string) (jexpr, error) {
	toks, err := lexExpr(src)
	if err != nil {
		return nil, err
	}
	p := &jparser{toks: toks, c: c}
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.i != len(toks) {
		return nil, fmt.Errorf("unexpected %q after the expression", p.peek().s)
	}
	return x, nil
}

// block parses statements up to one of the end keywords; it returns the
// keyword found (its statement's tokens after it in rest).
func (c *jcompiler) block(ends ...string) ([]jstmt, string, []jtok, error) {
	var out []jstmt
	for c.i < len(c.pieces) {
		pc := c.pieces[c.i]
		c.i++
		switch pc.kind {
		case 't':
			out = append(out, &jtext{s: pc.src})
		case 'e':
			x, err := c.parseExpr(pc.src)
			if err != nil {
				return nil, "", nil, err
			}
			out = append(out, &jprint{x: x})
		case 's':
			toks, err := lexExpr(pc.src)
			if err != nil {
				return nil, "", nil, err
			}
			if len(toks) == 0 || toks[0].kind != 'n' {
				return nil, "", nil, errors.New("empty statement")
			}
			kw := toks[0].s
			for _, e := range ends {
				if kw == e {
					return out, kw, toks[1:], nil
				}
			}
			st, err := c.statement(kw, toks[1:])
			if err != nil {
				return nil, "", nil, err
			}
			out = append(out, st)
		}
	}
	if len(ends) > 0 {
		return nil, "", nil, fmt.Errorf("missing {%% %s %%}", ends[len(ends)-1])
	}
	return out, "", nil, nil
}

func (c *jcompiler) statement(kw string, toks []jtok) (jstmt, error) {
	switch kw {
	case "if":
		return c.ifStmt(toks)
	case "for":
		return c.forStmt(toks)
	case "set":
		return c.setStmt(toks)
	case "break", "continue":
		if c.loops == 0 || len(toks) != 0 {
			return nil, fmt.Errorf("%s outside a loop", kw)
		}
		return &jloopCtl{brk: kw == "break"}, nil
	}
	return nil, fmt.Errorf("statement %q is not supported", kw)
}

func (c *jcompiler) exprOf(toks []jtok) (jexpr, error) {
	p := &jparser{toks: toks, c: c}
	x, err := p.expr()
	if err == nil && p.i != len(toks) {
		err = fmt.Errorf("unexpected %q", p.peek().s)
	}
	return x, err
}

func (c *jcompiler) ifStmt(toks []jtok) (jstmt, error) {
	st := &jif{}
	for {
		cond, err := c.exprOf(toks)
		if err != nil {
			return nil, err
		}
		body, kw, rest, err := c.block("elif", "else", "endif")
		if err != nil {
			return nil, err
		}
		st.conds, st.bodies = append(st.conds, cond), append(st.bodies, body)
		switch kw {
		case "elif":
			toks = rest
			continue
		case "else":
			if st.els, _, _, err = c.block("endif"); err != nil {
				return nil, err
			}
		}
		return st, nil
	}
}

func (c *jcompiler) forStmt(toks []jtok) (jstmt, error) {
	p := &jparser{toks: toks, c: c}
	st := &jfor{}
	for {
		n, err := p.name()
		if err != nil {
			return nil, err
		}
		st.vars = append(st.vars, n)
		c.vars[n] = true
		if !p.accept(",") {
			break
		}
	}
	if err := p.expect("in"); err != nil {
		return nil, err
	}
	var err error
	if st.iter, err = p.or(); err != nil {
		return nil, err
	}
	if p.accept("if") {
		if st.cond, err = p.or(); err != nil {
			return nil, err
		}
	}
	if p.i != len(toks) {
		return nil, fmt.Errorf("unexpected %q in for", p.peek().s)
	}
	c.loops++
	body, kw, _, err := c.block("else", "endfor")
	c.loops--
	if err != nil {
		return nil, err
	}
	st.body = body
	if kw == "else" {
		if st.els, _, _, err = c.block("endfor"); err != nil {
			return nil, err
		}
	}
	return st, nil
}

func (c *jcompiler) setStmt(toks []jtok) (jstmt, error) {
	p := &jparser{toks: toks, c: c}
	st := &jset{}
	n, err := p.name()
	if err != nil {
		return nil, err
	}
	st.name = n
	if p.accept(".") {
		if st.attr, err = p.name(); err != nil {
			return nil, err
		}
	} else {
		c.vars[n] = true
	}
	if !p.accept("=") {
		return nil, errors.New("only {% set name = expression %} is supported")
	}
	if st.x, err = p.expr(); err != nil {
		return nil, err
	}
	if p.i != len(toks) {
		return nil, fmt.Errorf("unexpected %q in set", p.peek().s)
	}
	return st, nil
}

// compileJinja parses a template into its statements.
func compileJinja(src string) (*jprogram, error) {
	pieces, err := splitTemplate(src)
	if err != nil {
		return nil, err
	}
	c := &jcompiler{pieces: pieces, vars: map[string]bool{}, regex: &regexCache{}}
	body, _, _, err := c.block()
	if err != nil {
		return nil, err
	}
	prog := &jprogram{body: body, usesJSON: c.usesJS, regex: c.regex}
	if len(body) == 1 {
		if pr, ok := body[0].(*jprint); ok {
			prog.single = pr.x
		}
	}
	return prog, nil
}

// nameRef is a name in an expression; value_json marks the template as
// reading the payload's JSON.
func (c *jcompiler) nameRef(n string) jexpr {
	if n == "value_json" {
		c.usesJS = true
	}
	return &jname{n: n}
}

func (c *jcompiler) newCall(fn jexpr, args []jexpr, kws []jkw) (jexpr, error) {
	switch f := fn.(type) {
	case *jname:
		if c.vars[f.n] {
			return nil, fmt.Errorf("calling %s is not supported", f.n)
		}
		g, ok := jGlobals[f.n]
		if !ok {
			return nil, fmt.Errorf("function %s() is not supported", f.n)
		}
		return &jcall{name: f.n, fn: g, args: args, kws: kws}, nil
	case *jattr:
		if n, ok := f.x.(*jname); ok && !c.vars[n.n] {
			if g, ok := jGlobals[n.n+"."+f.name]; ok {
				return &jcall{name: n.n + "." + f.name, fn: g, args: args, kws: kws}, nil
			}
		}
		if _, ok := jMethods[f.name]; !ok {
			return nil, fmt.Errorf("method .%s() is not supported", f.name)
		}
		return &jmethod{x: f.x, name: f.name, args: args, kws: kws}, nil
	}
	return nil, errors.New("only functions and methods can be called")
}

func (c *jcompiler) newFilter(name string, x jexpr, args []jexpr, kws []jkw) (jexpr, error) {
	f, ok := jFilters[name]
	if !ok {
		return nil, fmt.Errorf("filter %s is not supported", name)
	}
	if strings.HasPrefix(name, "regex_") && len(args) > 0 {
		c.regex.note(args[0])
	}
	return &jfilter{name: name, fn: f, x: x, args: args, kws: kws}, nil
}

func (c *jcompiler) newTest(name string, neg bool, x jexpr, args []jexpr) (jexpr, error) {
	f, ok := jTests[name]
	if !ok {
		return nil, fmt.Errorf("test %s is not supported", name)
	}
	return &jtest{name: name, fn: f, neg: neg, x: x, args: args}, nil
}
