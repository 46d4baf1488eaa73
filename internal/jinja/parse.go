package jinja

import (
	"errors"
	"fmt"
)

// jparser parses the tokens of one expression or statement (Jinja's
// grammar and precedence: conditional, or, and, not, comparisons, + -, ~,
// * / // %, **, unary, then postfix, filters and tests).
type jparser struct {
	toks []jtok
	i    int
	c    *jcompiler
}

func (p *jparser) peek() jtok {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return jtok{}
}

func (p *jparser) next() jtok { t := p.peek(); p.i++; return t }

func (p *jparser) isOp(s string) bool   { t := p.peek(); return t.kind == 'o' && t.s == s }
func (p *jparser) isName(s string) bool { t := p.peek(); return t.kind == 'n' && t.s == s }

func (p *jparser) accept(s string) bool {
	if p.isOp(s) || p.isName(s) {
		p.i++
		return true
	}
	return false
}

func (p *jparser) expect(s string) error {
	if !p.accept(s) {
		return fmt.Errorf("expected %q, found %q", s, p.peek().s)
	}
	return nil
}

func (p *jparser) name() (string, error) {
	t := p.next()
	if t.kind != 'n' {
		return "", fmt.Errorf("expected a name, found %q", t.s)
	}
	return t.s, nil
}

// expr parses a full expression (with the conditional form).
func (p *jparser) expr() (jexpr, error) {
	x, err := p.or()
	if err != nil {
		return nil, err
	}
	for p.accept("if") {
		cond, err := p.or()
		if err != nil {
			return nil, err
		}
		var els jexpr
		if p.accept("else") {
			if els, err = p.expr(); err != nil {
				return nil, err
			}
		}
		x = &jcond{then: x, cond: cond, els: els}
	}
	return x, nil
}

func (p *jparser) or() (jexpr, error) {
	x, err := p.and()
	for err == nil && p.accept("or") {
		var y jexpr
		if y, err = p.and(); err == nil {
			x = &jlogic{or: true, l: x, r: y}
		}
	}
	return x, err
}

func (p *jparser) and() (jexpr, error) {
	x, err := p.not()
	for err == nil && p.accept("and") {
		var y jexpr
		if y, err = p.not(); err == nil {
			x = &jlogic{l: x, r: y}
		}
	}
	return x, err
}

func (p *jparser) not() (jexpr, error) {
	if p.accept("not") {
		x, err := p.not()
		return &junary{op: "not", x: x}, err
	}
	return p.compare()
}

func (p *jparser) compare() (jexpr, error) {
	x, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	var c *jcmp
	for {
		op := ""
		switch t := p.peek(); {
		case t.kind == 'o' && (t.s == "==" || t.s == "!=" || t.s == "<" || t.s == "<=" || t.s == ">" || t.s == ">="):
			op = t.s
			p.i++
		case p.isName("in"):
			op = "in"
			p.i++
		case p.isName("not") && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == 'n' && p.toks[p.i+1].s == "in":
			op = "not in"
			p.i += 2
		}
		if op == "" {
			break
		}
		y, err := p.binary(0)
		if err != nil {
			return nil, err
		}
		if c == nil {
			c = &jcmp{first: x}
		}
		c.ops = append(c.ops, op)
		c.rest = append(c.rest, y)
	}
	if c != nil {
		return c, nil
	}
	return x, nil
}

// jLevels are the binary operator levels above unary, loosest first.
var jLevels = [][]string{{"+", "-"}, {"~"}, {"*", "/", "//", "%"}, {"**"}}

func (p *jparser) binary(level int) (jexpr, error) {
	if level == len(jLevels) {
		return p.unary(true)
	}
	x, err := p.binary(level + 1)
	for err == nil {
		op := ""
		for _, o := range jLevels[level] {
			if p.isOp(o) {
				op = o
			}
		}
		if op == "" {
			break
		}
		p.i++
		var y jexpr
		if y, err = p.binary(level + 1); err == nil {
			x = &jbin{op: op, l: x, r: y}
		}
	}
	return x, err
}

func (p *jparser) unary(withFilter bool) (jexpr, error) {
	var x jexpr
	var err error
	switch {
	case p.accept("-"):
		x, err = p.unary(false)
		x = &junary{op: "-", x: x}
	case p.accept("+"):
		x, err = p.unary(false)
		x = &junary{op: "+", x: x}
	default:
		x, err = p.primary()
	}
	if err != nil {
		return nil, err
	}
	if x, err = p.postfix(x); err != nil || !withFilter {
		return x, err
	}
	return p.filters(x)
}

func (p *jparser) primary() (jexpr, error) {
	if p.c.depth++; p.c.depth > maxNesting {
		return nil, errors.New("expression nested too deeply")
	}
	defer func() { p.c.depth-- }()
	t := p.next()
	switch t.kind {
	case 'n':
		switch t.s {
		case "true", "True":
			return &jlit{v: true}, nil
		case "false", "False":
			return &jlit{v: false}, nil
		case "none", "None":
			return &jlit{v: nil}, nil
		}
		return p.c.nameRef(t.s), nil
	case 'i', 'f':
		return &jlit{v: t.num}, nil
	case 's':
		s := t.s
		for p.peek().kind == 's' {
			s += p.next().s
		}
		return &jlit{v: s}, nil
	case 'o':
		switch t.s {
		case "(":
			return p.paren()
		case "[":
			items, err := p.list("]")
			return constant(&jlist{items: items}), err
		case "{":
			d, err := p.dict()
			return constant(d), err
		}
	}
	if t.kind == 0 {
		return nil, errors.New("unexpected end of expression")
	}
	return nil, fmt.Errorf("unexpected %q", t.s)
}

// maxNesting bounds the nesting of brackets and parentheses.
const maxNesting = 64

func (p *jparser) paren() (jexpr, error) {
	if p.accept(")") {
		return &jlist{tuple: true}, nil
	}
	x, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.accept(")") {
		return x, nil
	}
	if err := p.expect(","); err != nil {
		return nil, err
	}
	rest, err := p.list(")")
	return constant(&jlist{tuple: true, items: append([]jexpr{x}, rest...)}), err
}

// constant evaluates a list, tuple or dict of literals once, at compile
// time: no operation changes a value in place.
func constant(x jexpr) jexpr {
	var items []jexpr
	switch c := x.(type) {
	case *jlist:
		items = c.items
	case *jdictLit:
		items = append(append(items, c.keys...), c.vals...)
	default:
		return x
	}
	for _, it := range items {
		if _, ok := it.(*jlit); !ok {
			return x
		}
	}
	v, err := x.eval(&jstate{budget: jBudget})
	if err != nil {
		return x
	}
	return &jlit{v: v}
}

// list parses comma-separated expressions up to close (a trailing comma
// allowed).
func (p *jparser) list(close string) ([]jexpr, error) {
	var items []jexpr
	for !p.accept(close) {
		x, err := p.expr()
		if err != nil {
			return nil, err
		}
		items = append(items, x)
		if !p.accept(",") {
			return items, p.expect(close)
		}
	}
	return items, nil
}

func (p *jparser) dict() (jexpr, error) {
	d := &jdictLit{}
	for !p.accept("}") {
		k, err := p.expr()
		if err != nil {
			return nil, err
		}
		if err := p.expect(":"); err != nil {
			return nil, err
		}
		v, err := p.expr()
		if err != nil {
			return nil, err
		}
		d.keys, d.vals = append(d.keys, k), append(d.vals, v)
		if !p.accept(",") {
			return d, p.expect("}")
		}
	}
	return d, nil
}

func (p *jparser) postfix(x jexpr) (jexpr, error) {
	for {
		switch {
		case p.accept("."):
			t := p.next()
			switch t.kind {
			case 'n':
				x = &jattr{x: x, name: t.s}
			case 'i':
				x = &jitem{x: x, key: &jlit{v: t.num}}
			default:
				return nil, fmt.Errorf("expected an attribute after '.', found %q", t.s)
			}
		case p.accept("["):
			sub, err := p.subscript(x)
			if err != nil {
				return nil, err
			}
			x = sub
		case p.isOp("("):
			p.i++
			call, err := p.call(x)
			if err != nil {
				return nil, err
			}
			x = call
		default:
			return x, nil
		}
	}
}

func (p *jparser) subscript(x jexpr) (jexpr, error) {
	var parts [3]jexpr
	n := 0
	for {
		if !p.isOp(":") && !p.isOp("]") {
			e, err := p.expr()
			if err != nil {
				return nil, err
			}
			parts[n] = e
		}
		if p.accept("]") {
			break
		}
		if n == 2 || !p.accept(":") {
			return nil, fmt.Errorf("expected ']' in subscript, found %q", p.peek().s)
		}
		n++
	}
	if n == 0 {
		if parts[0] == nil {
			return nil, errors.New("empty subscript")
		}
		return &jitem{x: x, key: parts[0]}, nil
	}
	return &jslice{x: x, lo: parts[0], hi: parts[1], step: parts[2]}, nil
}

// args parses call arguments after "(": positional, then name=value.
func (p *jparser) args() ([]jexpr, []jkw, error) {
	var args []jexpr
	var kws []jkw
	for !p.accept(")") {
		if t := p.peek(); t.kind == 'n' && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == 'o' && p.toks[p.i+1].s == "=" {
			p.i += 2
			v, err := p.expr()
			if err != nil {
				return nil, nil, err
			}
			kws = append(kws, jkw{name: t.s, x: v})
		} else {
			v, err := p.expr()
			if err != nil {
				return nil, nil, err
			}
			args = append(args, v)
		}
		if !p.accept(",") {
			return args, kws, p.expect(")")
		}
	}
	return args, kws, nil
}

func (p *jparser) call(fn jexpr) (jexpr, error) {
	args, kws, err := p.args()
	if err != nil {
		return nil, err
	}
	return p.c.newCall(fn, args, kws)
}

// filters parses "| name(args)" and "is [not] test args" after x.
func (p *jparser) filters(x jexpr) (jexpr, error) {
	for {
		switch {
		case p.accept("|"):
			name, err := p.name()
			if err != nil {
				return nil, err
			}
			var args []jexpr
			var kws []jkw
			if p.accept("(") {
				if args, kws, err = p.args(); err != nil {
					return nil, err
				}
			}
			if x, err = p.c.newFilter(name, x, args, kws); err != nil {
				return nil, err
			}
		case p.accept("is"):
			t, err := p.test(x)
			if err != nil {
				return nil, err
			}
			x = t
		default:
			return x, nil
		}
	}
}

func (p *jparser) test(x jexpr) (jexpr, error) {
	neg := p.accept("not")
	name, err := p.name()
	if err != nil {
		return nil, err
	}
	var args []jexpr
	switch t := p.peek(); {
	case p.accept("("):
		if args, _, err = p.args(); err != nil {
			return nil, err
		}
	case t.kind == 's' || t.kind == 'i' || t.kind == 'f' || (t.kind == 'o' && (t.s == "[" || t.s == "{")) ||
		(t.kind == 'n' && t.s != "else" && t.s != "or" && t.s != "and" && t.s != "is" && t.s != "if"):
		a, err := p.primary()
		if err != nil {
			return nil, err
		}
		if a, err = p.postfix(a); err != nil {
			return nil, err
		}
		args = []jexpr{a}
	}
	return p.c.newTest(name, neg, x, args)
}
