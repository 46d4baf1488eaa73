package jinja

import (
	"errors"
	"fmt"
	"strings"
)

// --- statements ---

// compiler turns pieces into a statement tree and checks every filter,
// test, function and method it names.
type compiler struct {
	pieces []piece
	i      int
	depth  int
	loops  int
	usesJS bool            // the template reads value_json
	vars   map[string]bool // names set or bound by loops
	regex  *regexCache
	noted  state // the budget of compiling the literal patterns
}

func (c *compiler) parseExpr(src string) (expr, error) {
	toks, err := lexExpr(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, c: c}
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
func (c *compiler) block(ends ...string) ([]stmt, string, []token, error) {
	var out []stmt
	for c.i < len(c.pieces) {
		pc := c.pieces[c.i]
		c.i++
		switch pc.kind {
		case 't':
			out = append(out, &textStmt{s: pc.src})
		case 'e':
			x, err := c.parseExpr(pc.src)
			if err != nil {
				return nil, "", nil, err
			}
			out = append(out, &printStmt{x: x})
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

func (c *compiler) statement(kw string, toks []token) (stmt, error) {
	if err := c.nest(); err != nil {
		return nil, err
	}
	defer c.unnest()
	switch kw {
	case "if":
		return c.parseIf(toks)
	case "for":
		return c.parseFor(toks)
	case "set":
		return c.parseSet(toks)
	case "break", "continue":
		if c.loops == 0 || len(toks) != 0 {
			return nil, fmt.Errorf("%s outside a loop", kw)
		}
		return &loopCtl{brk: kw == "break"}, nil
	}
	return nil, fmt.Errorf("statement %q is not supported", kw)
}

func (c *compiler) exprOf(toks []token) (expr, error) {
	p := &parser{toks: toks, c: c}
	x, err := p.expr()
	if err == nil && p.i != len(toks) {
		err = fmt.Errorf("unexpected %q", p.peek().s)
	}
	return x, err
}

func (c *compiler) parseIf(toks []token) (stmt, error) {
	st := &ifStmt{}
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

func (c *compiler) parseFor(toks []token) (stmt, error) {
	p := &parser{toks: toks, c: c}
	st := &forStmt{}
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

func (c *compiler) parseSet(toks []token) (stmt, error) {
	p := &parser{toks: toks, c: c}
	st := &setStmt{}
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

// Compile parses a template once, for many renderings. A template that
// names a filter, test, function, method or statement the interpreter
// lacks, or is malformed or too large (MaxTemplateLen, MaxNesting), is
// refused with the reason.
func Compile(src string) (*Template, error) {
	pieces, err := splitTemplate(src)
	if err != nil {
		return nil, err
	}
	c := &compiler{pieces: pieces, vars: map[string]bool{}, regex: &regexCache{}, noted: state{budget: DefaultBudget}}
	body, _, _, err := c.block()
	if err != nil {
		return nil, err
	}
	prog := &Template{body: body, usesJSON: c.usesJS, regex: c.regex}
	if len(body) == 1 {
		if pr, ok := body[0].(*printStmt); ok {
			prog.single = pr.x
		}
	}
	return prog, nil
}

// nameRef is a name in an expression; value_json marks the template as
// reading the payload's JSON.
func (c *compiler) nameRef(n string) expr {
	if n == "value_json" {
		c.usesJS = true
	}
	return &varRef{n: n}
}

func (c *compiler) newCall(fn expr, args []expr, kws []kwarg) (expr, error) {
	switch f := fn.(type) {
	case *varRef:
		if c.vars[f.n] {
			return nil, fmt.Errorf("calling %s is not supported", f.n)
		}
		g, ok := globals[f.n]
		if !ok {
			return nil, fmt.Errorf("function %s() is not supported", f.n)
		}
		return &callExpr{name: f.n, fn: g, args: args, kws: kws}, nil
	case *attrExpr:
		if n, ok := f.x.(*varRef); ok && !c.vars[n.n] {
			if g, ok := globals[n.n+"."+f.name]; ok {
				return &callExpr{name: n.n + "." + f.name, fn: g, args: args, kws: kws}, nil
			}
		}
		if _, ok := methods[f.name]; !ok {
			return nil, fmt.Errorf("method .%s() is not supported", f.name)
		}
		return &methodExpr{x: f.x, name: f.name, args: args, kws: kws}, nil
	}
	return nil, errors.New("only functions and methods can be called")
}

func (c *compiler) newFilter(name string, x expr, args []expr, kws []kwarg) (expr, error) {
	f, ok := filters[name]
	if !ok {
		return nil, fmt.Errorf("filter %s is not supported", name)
	}
	if strings.HasPrefix(name, "regex_") && len(args) > 0 {
		c.regex.note(&c.noted, args[0])
	}
	return &filterExpr{name: name, fn: f, x: x, args: args, kws: kws}, nil
}

func (c *compiler) newTest(name string, neg bool, x expr, args []expr) (expr, error) {
	f, ok := tests[name]
	if !ok {
		return nil, fmt.Errorf("test %s is not supported", name)
	}
	return &testExpr{name: name, fn: f, neg: neg, x: x, args: args}, nil
}
