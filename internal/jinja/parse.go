package jinja

import (
	"errors"
	"fmt"
)

// parser parses the tokens of one expression or statement (Jinja's
// grammar and precedence: conditional, or, and, not, comparisons, + -, ~,
// * / // %, **, unary, then postfix, filters and tests).
type parser struct {
	toks []token
	i    int
	c    *compiler
}

func (p *parser) peek() token {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return token{}
}

func (p *parser) next() token { t := p.peek(); p.i++; return t }

func (p *parser) isOp(s string) bool   { t := p.peek(); return t.kind == 'o' && t.s == s }
func (p *parser) isName(s string) bool { t := p.peek(); return t.kind == 'n' && t.s == s }

func (p *parser) accept(s string) bool {
	if p.isOp(s) || p.isName(s) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expect(s string) error {
	if !p.accept(s) {
		return fmt.Errorf("expected %q, found %q", s, p.peek().s)
	}
	return nil
}

func (p *parser) name() (string, error) {
	t := p.next()
	if t.kind != 'n' {
		return "", fmt.Errorf("expected a name, found %q", t.s)
	}
	return t.s, nil
}

// expr parses a full expression (with the conditional form).
func (p *parser) expr() (expr, error) {
	x, err := p.or()
	if err != nil {
		return nil, err
	}
	for n := 1; p.accept("if"); n++ {
		if err := chained(n); err != nil {
			return nil, err
		}
		cond, err := p.or()
		if err != nil {
			return nil, err
		}
		var els expr
		if p.accept("else") {
			if err := p.c.nest(); err != nil {
				return nil, err
			}
			els, err = p.expr()
			p.c.unnest()
			if err != nil {
				return nil, err
			}
		}
		x = &condExpr{then: x, cond: cond, els: els}
	}
	return x, nil
}

func (p *parser) or() (expr, error) {
	x, err := p.and()
	for n := 1; err == nil && p.accept("or"); n++ {
		var y expr
		if err = chained(n); err != nil {
			break
		}
		if y, err = p.and(); err == nil {
			x = &logicExpr{or: true, l: x, r: y}
		}
	}
	return x, err
}

func (p *parser) and() (expr, error) {
	x, err := p.not()
	for n := 1; err == nil && p.accept("and"); n++ {
		var y expr
		if err = chained(n); err != nil {
			break
		}
		if y, err = p.not(); err == nil {
			x = &logicExpr{l: x, r: y}
		}
	}
	return x, err
}

func (p *parser) not() (expr, error) {
	if p.accept("not") {
		if err := p.c.nest(); err != nil {
			return nil, err
		}
		defer p.c.unnest()
		x, err := p.not()
		return &unaryExpr{op: "not", x: x}, err
	}
	return p.compare()
}

func (p *parser) compare() (expr, error) {
	x, err := p.binary(0)
	if err != nil {
		return nil, err
	}
	var c *cmpExpr
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
			c = &cmpExpr{first: x}
		}
		c.ops = append(c.ops, op)
		c.rest = append(c.rest, y)
	}
	if c != nil {
		return c, nil
	}
	return x, nil
}

// binaryLevels are the binary operator levels above unary, loosest first.
var binaryLevels = [][]string{{"+", "-"}, {"~"}, {"*", "/", "//", "%"}, {"**"}}

func (p *parser) binary(level int) (expr, error) {
	if level == len(binaryLevels) {
		return p.unary(true)
	}
	x, err := p.binary(level + 1)
	for n := 1; err == nil; n++ {
		op := ""
		for _, o := range binaryLevels[level] {
			if p.isOp(o) {
				op = o
			}
		}
		if op == "" {
			break
		}
		p.i++
		var y expr
		if err = chained(n); err != nil {
			break
		}
		if y, err = p.binary(level + 1); err == nil {
			x = &binExpr{op: op, l: x, r: y}
		}
	}
	return x, err
}

func (p *parser) unary(withFilter bool) (expr, error) {
	var x expr
	var err error
	if p.isOp("-") || p.isOp("+") {
		if err := p.c.nest(); err != nil {
			return nil, err
		}
		defer p.c.unnest()
	}
	switch {
	case p.accept("-"):
		x, err = p.unary(false)
		x = &unaryExpr{op: "-", x: x}
	case p.accept("+"):
		x, err = p.unary(false)
		x = &unaryExpr{op: "+", x: x}
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

func (p *parser) primary() (expr, error) {
	if err := p.c.nest(); err != nil {
		return nil, err
	}
	defer p.c.unnest()
	t := p.next()
	switch t.kind {
	case 'n':
		switch t.s {
		case "true", "True":
			return &literal{v: true}, nil
		case "false", "False":
			return &literal{v: false}, nil
		case "none", "None":
			return &literal{v: nil}, nil
		}
		return p.c.nameRef(t.s), nil
	case 'i', 'f':
		return &literal{v: t.num}, nil
	case 's':
		s := t.s
		for p.peek().kind == 's' {
			s += p.next().s
		}
		return &literal{v: s}, nil
	case 'o':
		switch t.s {
		case "(":
			return p.paren()
		case "[":
			items, err := p.list("]")
			return constant(&listExpr{items: items}), err
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

// nest enters one level of nesting (a bracket, a unary operator, a
// conditional, a block): the evaluator recurses as deep as the parser.
func (c *compiler) nest() error {
	if c.depth++; c.depth > MaxNesting {
		return errors.New("expression nested too deeply")
	}
	return nil
}

func (c *compiler) unnest() { c.depth-- }

// maxChain bounds a chain of operators, filters, attributes or calls at
// one level (a + b + …, x | f | g …): the evaluator recurses once a link.
const maxChain = 4 * MaxNesting

func chained(n int) error {
	if n > maxChain {
		return fmt.Errorf("more than %d operators, filters or attributes in a row", maxChain)
	}
	return nil
}

func (p *parser) paren() (expr, error) {
	if p.accept(")") {
		return &listExpr{tuple: true}, nil
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
	return constant(&listExpr{tuple: true, items: append([]expr{x}, rest...)}), err
}

// constant evaluates a list, tuple or dict of literals once, at compile
// time: no operation changes a value in place.
func constant(x expr) expr {
	var items []expr
	switch c := x.(type) {
	case *listExpr:
		items = c.items
	case *dictExpr:
		items = append(append(items, c.keys...), c.vals...)
	default:
		return x
	}
	for _, it := range items {
		if _, ok := it.(*literal); !ok {
			return x
		}
	}
	v, err := x.eval(&state{budget: DefaultBudget})
	if err != nil {
		return x
	}
	return &literal{v: v}
}

// list parses comma-separated expressions up to close (a trailing comma
// allowed).
func (p *parser) list(close string) ([]expr, error) {
	var items []expr
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

func (p *parser) dict() (expr, error) {
	d := &dictExpr{}
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

func (p *parser) postfix(x expr) (expr, error) {
	for n := 0; ; n++ {
		if err := chained(n); err != nil {
			return nil, err
		}
		switch {
		case p.accept("."):
			t := p.next()
			switch t.kind {
			case 'n':
				x = &attrExpr{x: x, name: t.s}
			case 'i':
				x = &itemExpr{x: x, key: &literal{v: t.num}}
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

func (p *parser) subscript(x expr) (expr, error) {
	var parts [3]expr
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
		return &itemExpr{x: x, key: parts[0]}, nil
	}
	return &sliceExpr{x: x, lo: parts[0], hi: parts[1], step: parts[2]}, nil
}

// args parses call arguments after "(": positional, then name=value.
func (p *parser) args() ([]expr, []kwarg, error) {
	var args []expr
	var kws []kwarg
	for !p.accept(")") {
		if t := p.peek(); t.kind == 'n' && p.i+1 < len(p.toks) && p.toks[p.i+1].kind == 'o' && p.toks[p.i+1].s == "=" {
			p.i += 2
			v, err := p.expr()
			if err != nil {
				return nil, nil, err
			}
			kws = append(kws, kwarg{name: t.s, x: v})
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

func (p *parser) call(fn expr) (expr, error) {
	args, kws, err := p.args()
	if err != nil {
		return nil, err
	}
	return p.c.newCall(fn, args, kws)
}

// filters parses "| name(args)" and "is [not] test args" after x.
func (p *parser) filters(x expr) (expr, error) {
	for n := 0; ; n++ {
		if err := chained(n); err != nil {
			return nil, err
		}
		switch {
		case p.accept("|"):
			name, err := p.name()
			if err != nil {
				return nil, err
			}
			var args []expr
			var kws []kwarg
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

func (p *parser) test(x expr) (expr, error) {
	neg := p.accept("not")
	name, err := p.name()
	if err != nil {
		return nil, err
	}
	var args []expr
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
		args = []expr{a}
	}
	return p.c.newTest(name, neg, x, args)
}
