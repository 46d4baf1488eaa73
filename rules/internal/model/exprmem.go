package model

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/builtin"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/vm/runtime"

	"github.com/pilothouse/pilothouse/rules/internal/core"
)

// Byte budgets inside an evaluation. expr's own MemoryBudget counts list
// elements and some builtins' output, but not `+` on strings, join,
// replace, toJSON or list literals, and repeat checks only after it has
// allocated: "{{ vars.v + vars.v }}" in a loop grew without bound. So every
// operation of an expression that builds a string, list or object goes
// through a function that measures what it is about to build before
// building it (or, where that cannot be known, right after, bounded by a
// small factor of its inputs): no single value may pass MaxValueBytes and
// one evaluation may not build more than MaxEvalBytes in all. The
// functions find the evaluation's budget in a hidden first argument (the
// environment variable memVar), added by memPatcher when an expression is
// compiled.

// memVar names the evaluation's *evalMem in the expression environment.
// It is not an identifier (a space), so an expression cannot name it.
const memVar = "eval memory"

// evalMem is one evaluation's byte and operation budget (exprops.go).
type evalMem struct {
	used  int // bytes built so far
	value int // MaxValueBytes
	total int // MaxEvalBytes

	ops    int // operations done so far
	maxOps int // MaxEvalOps, or what the run has left when that is less
	// run is the run's budget when it bounds this evaluation (maxOps is
	// what the run had left), nil when MaxEvalOps does.
	run *RunOps
	// done is the run's context's Done channel (nil: it never ends).
	done <-chan struct{}
	ctx  context.Context
}

// LimitError is an evaluation that went past a byte budget.
type LimitError struct {
	What  string // what was being built
	Bytes int    // its size, or how far the evaluation had got
	Limit string // the limit's name in Limits
	Max   int
	// AtLeast: Bytes is where measuring stopped, past the limit.
	AtLeast bool
}

// overLimit is the error for a measured size past limit.
func overLimit(what string, s core.ValueSize, limit int) *LimitError {
	if s.Deep {
		return &LimitError{What: what, Bytes: -1, Limit: "MaxValueBytes", Max: limit}
	}
	return &LimitError{What: what, Bytes: s.Bytes, Limit: "MaxValueBytes", Max: limit, AtLeast: true}
}

func (e *LimitError) Error() string {
	if e.Limit == opsLimit || e.Limit == runOpsLimit {
		return opsMessage(e)
	}
	if e.Limit == "MaxEvalBytes" {
		return fmt.Sprintf("%s would bring what this evaluation builds to %d bytes; the limit is %d bytes (MaxEvalBytes)", e.What, e.Bytes, e.Max)
	}
	if e.Bytes < 0 {
		return fmt.Sprintf("%s is nested more than %d levels deep (MaxValueBytes measures at most that depth)", e.What, core.MaxMeasureDepth)
	}
	if e.AtLeast {
		return fmt.Sprintf("%s would be more than %d bytes, the limit per value (MaxValueBytes)", e.What, e.Max)
	}
	return fmt.Sprintf("%s would be %d bytes; the limit is %d bytes per value (MaxValueBytes)", e.What, e.Bytes, e.Max)
}

// memOf is the budget an expression function was handed; a missing one
// (an environment built elsewhere) gets the default budgets.
func memOf(a any) *evalMem {
	if m, ok := a.(*evalMem); ok && m != nil {
		return m
	}
	return &evalMem{value: core.DefaultLimits.MaxValueBytes, total: core.DefaultLimits.MaxEvalBytes, maxOps: core.DefaultLimits.MaxEvalOps}
}

// charge accounts n bytes about to be built by what.
func (m *evalMem) charge(what string, n int) error {
	if n > m.value || n < 0 {
		return &LimitError{What: what, Bytes: n, Limit: "MaxValueBytes", Max: m.value}
	}
	if m.used += n; m.used > m.total {
		return &LimitError{What: what, Bytes: m.used, Limit: "MaxEvalBytes", Max: m.total}
	}
	return nil
}

// chargeValue measures v (walking at most the value budget) and charges it.
func (m *evalMem) chargeValue(what string, v any) error {
	s := core.Measure(v, m.value, false)
	if s.Over(m.value) {
		return overLimit(what, s, m.value)
	}
	if err := m.measured(what, s.Bytes); err != nil {
		return err
	}
	return m.charge(what, s.Bytes)
}

// fits refuses arguments larger than one value may be: the builtins that
// walk their arguments (flatten, max, toJSON, string, …) would otherwise
// materialise a list made of many references to one large value.
func (m *evalMem) fits(what string, args []any) error {
	if s := core.Measure(args, m.value, false); s.Over(m.value) {
		return overLimit(what+"'s argument", s, m.value)
	}
	return nil
}

// resultFits refuses a result larger than one value may be (a list of
// references to one large string is cheap to make but not to keep), and
// charges measuring it.
func (m *evalMem) resultFits(out any) error {
	switch out.(type) {
	case nil, bool, int, float64:
		return nil
	}
	s := core.Measure(out, m.value, false)
	if s.Over(m.value) {
		return overLimit("the result", s, m.value)
	}
	return m.measured("the result", s.Bytes)
}

// mulSize is a*b, or -1 when it overflows.
func mulSize(a, b int) int {
	if a < 0 || b < 0 || (a != 0 && b > (1<<62)/a) {
		return -1
	}
	return a * b
}

// memAdd is `+` when either side may be a string.
func memAdd(args ...any) (any, error) {
	m := memOf(args[0])
	a, b := args[1], args[2]
	if x, ok := a.(string); ok {
		if y, ok := b.(string); ok {
			if err := m.tick(`"+"`, 1+(len(x)+len(y))/16); err != nil {
				return nil, err
			}
			if err := m.charge(`"+"`, len(x)+len(y)); err != nil {
				return nil, err
			}
			return x + y, nil
		}
	}
	return runtime.Add(a, b), nil
}

// memList is a list literal with a computed element: [a, a] where a is a
// large list is cheap to build but large once encoded, and doubling it a
// few times over would make the walks of later operations explode.
func memList(args ...any) (any, error) {
	m := memOf(args[0])
	if err := m.tick("a list literal", len(args)); err != nil {
		return nil, err
	}
	out := make([]any, len(args)-1)
	copy(out, args[1:])
	return out, m.chargeValue("a list literal", out)
}

// memMap is an object literal with a computed member: keys and values
// alternate in args.
func memMap(args ...any) (any, error) {
	m := memOf(args[0])
	if err := m.tick("an object literal", len(args)); err != nil {
		return nil, err
	}
	out := make(map[string]any, (len(args)-1)/2)
	for i := 1; i+1 < len(args); i += 2 {
		k, ok := args[i].(string)
		if !ok {
			return nil, fmt.Errorf("object key must be a string, got %T", args[i])
		}
		out[k] = args[i+1]
	}
	return out, m.chargeValue("an object literal", out)
}

// memRepeat is repeat with its size checked before it allocates.
func memRepeat(m *evalMem, args []any) error {
	s, _ := args[0].(string)
	return m.charge("repeat", mulSize(len(s), runtime.ToInt(args[1])))
}

// memJoin is join's size: the elements and the glue between them.
func memJoin(m *evalMem, args []any) error {
	glue := ""
	if len(args) == 2 {
		glue, _ = args[1].(string)
	}
	n, count := 0, 0
	switch l := args[0].(type) {
	case []string:
		for _, s := range l {
			n += len(s)
		}
		count = len(l)
	case []any:
		for _, e := range l {
			s, _ := e.(string)
			n += len(s)
		}
		count = len(l)
	}
	if count > 1 {
		n += mulSize(len(glue), count-1)
	}
	return m.charge("join", n)
}

// memReplace is replace's size: each replaced occurrence grows the string
// by len(new)-len(old); an empty old matches before every rune and at the
// end.
func memReplace(m *evalMem, args []any) error {
	s, _ := args[0].(string)
	old, _ := args[1].(string)
	repl, _ := args[2].(string)
	count := utf8.RuneCountInString(s) + 1
	if old != "" {
		count = strings.Count(s, old)
	}
	if len(args) == 4 {
		if n := runtime.ToInt(args[3]); n >= 0 && n < count {
			count = n
		}
	}
	grow := len(repl) - len(old)
	if grow <= 0 {
		return m.charge("replace", len(s))
	}
	return m.charge("replace", len(s)+mulSize(count, grow))
}

// memSplit is split's size: each piece costs its bytes and its quotes.
func memSplit(m *evalMem, args []any) error {
	s, _ := args[0].(string)
	sep, _ := args[1].(string)
	count := utf8.RuneCountInString(s)
	if sep != "" {
		count = strings.Count(s, sep) + 1
	}
	if len(args) == 3 {
		if n := runtime.ToInt(args[2]); n >= 0 && n < count {
			count = n
		}
	}
	return m.charge("split", len(s)+mulSize(count, 3))
}

// memToJSON bounds toJSON's indented encoding before it is made.
func memToJSON(m *evalMem, args []any) error {
	if s := core.Measure(args[0], m.value, true); s.Over(m.value) {
		return overLimit("toJSON", s, m.value)
	}
	return nil
}

// memBase64 is toBase64's size.
func memBase64(m *evalMem, args []any) error {
	s, _ := args[0].(string)
	return m.charge("toBase64", base64.StdEncoding.EncodedLen(len(s)))
}

// memBuiltins are the expr builtins whose cost or result grows with their
// input, each with the check made before it runs (nil: its arguments must
// fit in one value; upper and lower grow a string by at most half,
// fromJSON's values are about as large as their text). Each call is first
// charged its operations (builtinOps); every result is then charged its
// bytes. The others (len, type, abs, ceil, floor, round, first, last,
// the bit functions) take constant time and make a scalar; now is
// not available; the loop builtins (map, filter, groupBy, …) are charged
// by iteration (exprops.go).
var memBuiltins = map[string]func(m *evalMem, args []any) error{
	"repeat": memRepeat, "join": memJoin, "replace": memReplace,
	"split": memSplit, "splitAfter": memSplit, "toJSON": memToJSON,
	"toBase64": memBase64, "upper": nil, "lower": nil, "fromJSON": nil, "string": nil, "concat": nil, "flatten": nil,
	"max": nil, "min": nil, "mean": nil, "median": nil, "uniq": nil, "sort": nil,
	"reverse": nil, "keys": nil, "values": nil, "toPairs": nil, "fromPairs": nil,
	"trim": nil, "trimPrefix": nil, "trimSuffix": nil, "indexOf": nil, "lastIndexOf": nil,
	"hasPrefix": nil, "hasSuffix": nil, "int": nil, "float": nil, "duration": nil, "date": nil,
	"timezone": nil, "take": nil, "fromBase64": nil, "get": memGet,
}

// memGet is get's check: none (a lookup builds nothing; builtinOps
// charges hashing its key).
func memGet(*evalMem, []any) error { return nil }

// memBuiltin wraps expr's builtin name: the hidden budget argument first,
// then the builtin's own arguments and types.
func memBuiltin(name string, pre func(*evalMem, []any) error) *builtin.Function {
	orig := builtin.Builtins[builtin.Index[name]]
	if pre == nil {
		pre = func(m *evalMem, args []any) error { return m.fits(name, args) }
	}
	fn := func(args ...any) (any, error) {
		m := memOf(args[0])
		args = args[1:]
		if err := pre(m, args); err != nil {
			return nil, err
		}
		if err := m.tick(name, builtinOps(name, args, m.opsLeft())); err != nil {
			return nil, err
		}
		out, err := callBuiltin(orig, args)
		if err != nil {
			return nil, err
		}
		return out, m.chargeValue(name, out)
	}
	f := &builtin.Function{Name: name, Func: fn}
	for _, t := range orig.Types {
		f.Types = append(f.Types, withMemParam(t))
	}
	if orig.Validate != nil {
		f.Validate = func(args []reflect.Type) (reflect.Type, error) {
			if len(args) == 0 {
				return orig.Validate(args)
			}
			return orig.Validate(args[1:])
		}
	}
	return f
}

func callBuiltin(f *builtin.Function, args []any) (any, error) {
	switch {
	case f.Func != nil:
		return f.Func(args...)
	case f.Safe != nil:
		out, _, err := f.Safe(args...)
		return out, err
	case f.Fast != nil && len(args) == 1:
		return f.Fast(args[0]), nil
	}
	return nil, fmt.Errorf("%s: wrong number of arguments", f.Name)
}

var memType = reflect.TypeOf((*evalMem)(nil))

// withMemParam is t with the budget as its first parameter.
func withMemParam(t reflect.Type) reflect.Type {
	in := []reflect.Type{memType}
	for i := 0; i < t.NumIn(); i++ {
		in = append(in, t.In(i))
	}
	out := make([]reflect.Type, t.NumOut())
	for i := range out {
		out[i] = t.Out(i)
	}
	return reflect.FuncOf(in, out, t.IsVariadic())
}

// memFunctions are the functions memPatcher calls, with their types.
var memFunctions = map[string]*builtin.Function{
	"_add":    {Name: "_add", Func: memAdd, Types: []reflect.Type{reflect.TypeOf(new(func(*evalMem, any, any) any)).Elem()}},
	"_cat":    {Name: "_cat", Func: memAdd, Types: []reflect.Type{reflect.TypeOf(new(func(*evalMem, string, string) string)).Elem()}},
	"_list":   {Name: "_list", Func: memList, Types: []reflect.Type{reflect.TypeOf(new(func(*evalMem, ...any) []any)).Elem()}},
	"_map":    {Name: "_map", Func: memMap, Types: []reflect.Type{reflect.TypeOf(new(func(*evalMem, ...any) map[string]any)).Elem()}},
	"_tick":   {Name: "_tick", Func: memTick, Types: []reflect.Type{reflect.TypeOf(new(func(*evalMem, string, int, int) bool)).Elem()}},
	"_range":  {Name: "_range", Func: memRange, Types: []reflect.Type{reflect.TypeOf(new(func(*evalMem, any, any) []int)).Elem()}},
	"_cmp":    {Name: "_cmp", Func: memCmp, Types: []reflect.Type{reflect.TypeOf(new(func(*evalMem, string, any, any) bool)).Elem()}},
	"_method": {Name: "_method", Func: memMethod, Types: []reflect.Type{reflect.TypeOf(new(func(*evalMem, ...any) bool)).Elem()}},
}

// memOption installs the budgeted functions in an expr configuration.
func memOption(c *conf.Config) {
	for name, pre := range memBuiltins {
		c.Functions[name] = memBuiltin(name, pre)
	}
	for name, f := range memFunctions {
		c.Functions[name] = f
	}
	c.Visitors = append(c.Visitors, &memPatcher{})
}

// exprOptions is the one expr configuration of automation/1 expressions.
func exprOptions(maxNodes uint) []expr.Option {
	return []expr.Option{expr.Env(compileEnv), expr.DisableBuiltin("now"), expr.MaxNodes(maxNodes), memOption}
}

// memPatcher rewrites an expression's growing operations into budgeted
// calls: `+` that may join strings, list and object literals with a
// computed member, and the builtins of memBuiltins (their budget
// argument); and its costly ones into charged ones (exprops.go): loop
// builtins, ranges and operators that walk their operands. A patcher
// lives in a pooled configuration, used by one compilation at a time;
// vars numbers the hidden variables it adds (never reset: a name only has
// to be unique within its expression).
type memPatcher struct{ vars int }

func (p *memPatcher) Visit(node *ast.Node) {
	switch n := (*node).(type) {
	case *ast.BuiltinNode:
		tickPredicate(n)
	case *ast.MemberNode:
		p.chargedKey(node, n)
	case *ast.BinaryNode:
		switch n.Operator {
		case "..":
			rangeCall(node, n)
			return
		case "+":
		default:
			p.chargedOp(node, n)
			return
		}
		if !mayBeString(n.Left.Type()) || !mayBeString(n.Right.Type()) {
			return
		}
		fn := "_add"
		if isString(n.Left.Type()) && isString(n.Right.Type()) {
			fn = "_cat"
		}
		ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: fn}, Arguments: []ast.Node{memIdent(), n.Left, n.Right}})
	case *ast.ArrayNode:
		if !isConstNode(n) {
			ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: "_list"}, Arguments: append([]ast.Node{memIdent()}, n.Nodes...)})
		}
	case *ast.MapNode:
		if !isConstNode(n) {
			args := []ast.Node{memIdent()}
			for _, p := range n.Pairs {
				pair := p.(*ast.PairNode)
				args = append(args, pair.Key, pair.Value)
			}
			ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: "_map"}, Arguments: args})
		}
	case *ast.CallNode:
		id, ok := n.Callee.(*ast.IdentifierNode)
		if !ok {
			p.chargedCall(node, n)
			return
		}
		if !hasMemBuiltin(id.Value) {
			return
		}
		if len(n.Arguments) > 0 {
			if a, ok := n.Arguments[0].(*ast.IdentifierNode); ok && a.Value == memVar {
				return
			}
		}
		ast.Patch(node, &ast.CallNode{Callee: n.Callee, Arguments: append([]ast.Node{memIdent()}, n.Arguments...)})
	}
}

func hasMemBuiltin(name string) bool { _, ok := memBuiltins[name]; return ok }

func memIdent() ast.Node { return &ast.IdentifierNode{Value: memVar} }

// mayBeString: unknown (any), an interface, or a string.
func mayBeString(t reflect.Type) bool {
	return t == nil || t.Kind() == reflect.Interface || t.Kind() == reflect.String
}

func isString(t reflect.Type) bool { return t != nil && t.Kind() == reflect.String }

// isConstNode: a literal, or a list or object of literals (bounded by the
// program's own size).
func isConstNode(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.NilNode, *ast.BoolNode, *ast.IntegerNode, *ast.FloatNode, *ast.StringNode, *ast.ConstantNode:
		return true
	case *ast.UnaryNode:
		return isConstNode(x.Node)
	case *ast.ArrayNode:
		for _, e := range x.Nodes {
			if !isConstNode(e) {
				return false
			}
		}
		return true
	case *ast.MapNode:
		for _, p := range x.Pairs {
			pair, ok := p.(*ast.PairNode)
			if !ok || !isConstNode(pair.Key) || !isConstNode(pair.Value) {
				return false
			}
		}
		return true
	}
	return false
}
