package model

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"time"

	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm/runtime"

	"github.com/pilothouse/pilothouse/rules/internal/core"
)

// CPU budgets inside an evaluation. expr runs an expression to its end:
// three nested sums over a list of 90,000 numbers are 7e14 additions, and
// nothing in the VM looks at the run's context. So every operation whose
// cost is not constant is charged against MaxEvalOps before it runs, and
// the charge also checks the run's context:
//
//   - each iteration of a loop builtin (all, any, map, filter, sum,
//     groupBy, reduce, …): memPatcher puts a call of _tick in front of
//     the predicate's body (and gives sum and count without one the
//     predicate #), charging one operation per predOpNodes of its
//     syntax nodes (at least one);
//   - each builtin that walks its arguments (memBuiltin): by their size,
//     times log n for sorting and n for uniq;
//   - the operators whose cost follows their operands (==, <, in,
//     contains, matches, startsWith, …, see costlyOp) and a lookup m[k]
//     with a computed key: their computed operands are evaluated into
//     hidden variables first, charged by _cmp, then used, so types and
//     checks stay what they were;
//   - a method call (trigger.time.Format(layout)), by its arguments;
//   - a range a..b (_range), and string + (memAdd).
//
// An operation is about one step of the VM, some 50 ns of CPU on the
// house's small machines: a syntax node of a loop builtin's predicate,
// a list element walked or made, 16 bytes of a string walked or made.
// Each charge follows the work measured per unit (BenchmarkOpsCost in
// exprops_test.go; ns of CPU per operation on a 2-core server under load,
// old counting → new):
//
//   - a loop builtin's iteration besides its predicate (the VM's call,
//     the tick, the result's slot): ~300 ns, was 1 operation, now iterOps
//     (groupBy, which also grows a map of lists, ~1 µs: groupIterOps);
//     a predicate's syntax node ~50 ns, was 1/8 operation, now 1;
//   - a range's element ~40-60 ns made and walked, was 1/16, now 1;
//   - measuring a value made (a list or object literal, a builtin's
//     result, the evaluation's result), by its bytes, which also charges
//     what a builtin builds: [vars.l] over 100,000 numbers was 2
//     operations for 0.5 ms, repeat('x', 100000) 4 for 250 µs;
//   - concat, flatten, toJSON and string walk with reflection or encode:
//     2 to 3 operations per element (walkOps).
//
// So an evaluation's MaxEvalOps (1,000,000) is about 50 ms of CPU, a
// run's MaxRunOps (5,000,000) a quarter second, and a principal's share
// (engine/internal/bounds) a tenth of a core at most.

// LimitError's limit names for the operation budgets of an evaluation
// and of a run.
const (
	opsLimit    = "MaxEvalOps"
	runOpsLimit = "MaxRunOps"
)

// tick charges n operations and checks the run's context.
func (m *evalMem) tick(what string, n int) error {
	if m.ops += n; m.ops > m.maxOps || n < 0 {
		return m.opsError(what)
	}
	if m.done == nil && m.ctx != nil {
		m.done = m.ctx.Done()
	}
	if m.done != nil {
		select {
		case <-m.done:
			return &stoppedError{ctx: m.ctx}
		default:
		}
	}
	return nil
}

// measured charges the operations of measuring a value of bytes (one per
// 16 bytes, as a walk of a string) without looking at the run's context:
// the evaluation's result is measured on every evaluation, most of them
// without a loop, which never ask for the context's Done channel.
func (m *evalMem) measured(what string, bytes int) error {
	if m.ops += bytes / 16; m.ops > m.maxOps {
		return m.opsError(what)
	}
	return nil
}

// opsError names the budget an evaluation went past: its own, or its
// run's (Bytes counts the run's operations then).
func (m *evalMem) opsError(what string) error {
	if m.run != nil {
		return &LimitError{What: what, Bytes: m.run.Used + m.ops, Limit: runOpsLimit, Max: m.run.Max}
	}
	return &LimitError{What: what, Bytes: m.ops, Limit: opsLimit, Max: m.maxOps}
}

// opsLeft is how many operations the evaluation may still do.
func (m *evalMem) opsLeft() int { return max(m.maxOps-m.ops, 0) }

// stoppedError is an evaluation stopped because its run's context ended:
// errors.Is finds context.Canceled or context.DeadlineExceeded in it.
type stoppedError struct{ ctx context.Context }

func (e *stoppedError) Error() string {
	msg := "the run was cancelled"
	if e.ctx.Err() == context.DeadlineExceeded {
		msg = "the run's deadline passed"
	}
	if c := context.Cause(e.ctx); c != nil && c != e.ctx.Err() {
		msg += " (" + c.Error() + ")"
	}
	return msg + " during the evaluation"
}

func (e *stoppedError) Unwrap() error { return e.ctx.Err() }

// memTick is _tick(mem, builtin, bytes, ops): one iteration of a loop
// builtin, which costs ops operations and adds bytes to what the
// evaluation builds (the slot of a map or filter result, a groupBy entry).
func memTick(args ...any) (any, error) {
	m := memOf(args[0])
	name, _ := args[1].(string)
	ops, _ := args[3].(int)
	if err := m.tick(name, max(ops, 1)); err != nil {
		return nil, err
	}
	if n, _ := args[2].(int); n > 0 {
		if m.used += n; m.used > m.total {
			return nil, &LimitError{What: name, Bytes: m.used, Limit: "MaxEvalBytes", Max: m.total}
		}
	}
	return true, nil
}

// iterOps is what an iteration of a loop builtin costs besides its
// predicate's nodes (calling it, the tick, the result's slot); groupBy's
// also hashes the key into a map of lists.
const (
	iterOps      = 6
	groupIterOps = 20
)

// predicateOps is what one iteration of builtin's predicate costs: the
// iteration itself and one operation per syntax node.
func predicateOps(builtin string, pred ast.Node) int {
	n := iterOps
	if builtin == "groupBy" {
		n = groupIterOps
	}
	ast.Find(pred, func(ast.Node) bool { n++; return false })
	return n
}

// loopBytes is what one iteration of a loop builtin adds to its result.
var loopBytes = map[string]int{"map": 16, "filter": 16, "sortBy": 32, "groupBy": 80}

var loopBuiltins = map[string]bool{
	"all": true, "none": true, "any": true, "one": true, "filter": true, "map": true,
	"find": true, "findIndex": true, "findLast": true, "findLastIndex": true,
	"count": true, "sum": true, "groupBy": true, "sortBy": true, "reduce": true,
}

// memRange is _range(mem, from, to): a..b, charged before it is made.
func memRange(args ...any) (any, error) {
	m := memOf(args[0])
	lo, hi := runtime.ToInt(args[1]), runtime.ToInt(args[2])
	n := 0
	if hi >= lo {
		n = hi - lo + 1
		if n <= 0 {
			n = math.MaxInt // more items than an int counts
		}
	}
	if err := m.tick("a range", 1+n); err != nil {
		return nil, err
	}
	if err := m.charge("a range", mulSize(n, 8)); err != nil {
		return nil, err
	}
	return runtime.MakeRange(lo, hi), nil
}

// memCmp is _cmp(mem, op, a, b): the cost of a op b, charged before it is
// computed.
func memCmp(args ...any) (any, error) {
	m := memOf(args[0])
	op, _ := args[1].(string)
	a, b := args[2], args[3]
	left := m.opsLeft() + 1
	var n int
	switch op {
	case "in": // hashing the key, or comparing it with each item
		n = work(a, left)
		if rv := reflect.ValueOf(b); rv.Kind() != reflect.Map {
			n += work(b, left)
		}
	case "[]": // m[k]: hashing the key
		n = work(b, left)
	case "contains", "matches":
		n = work(a, left) + work(b, left)
		if op == "matches" {
			// Compiling the pattern (a constant one is compiled once, but
			// is as short as the program).
			n += 4 * work(b, left)
		}
	default: // comparisons stop at the shorter operand
		n = min(work(a, left), work(b, left))
	}
	return true, m.tick(fmt.Sprintf("%q", op), 1+n)
}

// work is what walking v costs in operations: one per list element or
// object member, one per 16 bytes of a string; counting stops past limit.
func work(v any, limit int) int {
	w := worker{limit: limit}
	w.add(v, 0)
	return w.n
}

type worker struct{ n, limit int }

func (w *worker) add(v any, depth int) {
	if w.n > w.limit || depth > core.MaxMeasureDepth {
		w.n = max(w.n, w.limit+1)
		return
	}
	w.n++
	switch x := v.(type) {
	case nil, bool, int, float64, time.Time, time.Duration:
	case string:
		w.n += len(x) / 16
	case []int:
		w.n += len(x)
	case []float64:
		w.n += len(x)
	case []string:
		for _, s := range x {
			w.n += 1 + len(s)/16
		}
	case []any:
		for _, e := range x {
			if w.add(e, depth+1); w.n > w.limit {
				return
			}
		}
	case map[string]any:
		for k, e := range x {
			w.n += len(k) / 16
			if w.add(e, depth+1); w.n > w.limit {
				return
			}
		}
	default:
		w.addReflect(reflect.ValueOf(v), depth)
	}
}

func (w *worker) addReflect(rv reflect.Value, depth int) {
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		for i := 0; i < rv.Len() && w.n <= w.limit; i++ {
			w.add(rv.Index(i).Interface(), depth+1)
		}
	case reflect.Map:
		it := rv.MapRange()
		for it.Next() && w.n <= w.limit {
			w.add(it.Key().Interface(), depth+1)
			w.add(it.Value().Interface(), depth+1)
		}
	case reflect.String:
		w.n += rv.Len() / 16
	case reflect.Pointer, reflect.Interface:
		if !rv.IsNil() {
			w.add(rv.Elem().Interface(), depth+1)
		}
	}
}

// walkOps is how many operations a builtin's walk of its arguments costs
// per unit of work: concat and flatten copy through reflection, toJSON
// and string encode; fromJSON and split make a value every few bytes.
var walkOps = map[string]int{"concat": 2, "flatten": 3, "toJSON": 3, "string": 3,
	"fromJSON": 16, "split": 32, "splitAfter": 32}

// builtinOps is what a builtin call costs before it runs: walking its
// arguments (walkOps), times log n to sort and n for uniq (which compares
// each item with every one kept), plus loading a time zone. What it
// builds is charged as its result is measured (evalMem.chargeValue).
func builtinOps(name string, args []any, limit int) int {
	if name == "get" { // a lookup: hashing the key
		return 1 + work(args[1:], limit)
	}
	n := 1 + work(args, limit)
	if w, ok := walkOps[name]; ok {
		n = mulSize(n, w)
	}
	switch name {
	case "sort", "median":
		n = mulSize(n, bits.Len(uint(n)))
	case "uniq":
		n = mulSize(n, n/2+1)
	case "timezone", "date":
		if name == "timezone" || len(args) == 3 {
			n += 1000
		}
	}
	if n < 0 {
		n = limit + 1
	}
	return n
}

// ---- patching ----

// tickPredicate puts _tick in front of a loop builtin's predicate, or
// gives sum and count without one the predicate # with it. sum of a
// constant range keeps no predicate: expr folds it into its value.
func tickPredicate(n *ast.BuiltinNode) {
	if !loopBuiltins[n.Name] {
		return
	}
	if len(n.Arguments) == 1 && (n.Name == "sum" || n.Name == "count") {
		if n.Name == "sum" && restoreConstRange(&n.Arguments[0]) {
			return
		}
		n.Arguments = append(n.Arguments, &ast.PredicateNode{Node: &ast.PointerNode{}})
	}
	if len(n.Arguments) < 2 {
		return
	}
	pred, ok := n.Arguments[1].(*ast.PredicateNode)
	if !ok {
		return
	}
	tick := &ast.CallNode{Callee: &ast.IdentifierNode{Value: "_tick"}, Arguments: []ast.Node{
		memIdent(), &ast.StringNode{Value: n.Name}, &ast.IntegerNode{Value: loopBytes[n.Name]},
		&ast.IntegerNode{Value: predicateOps(n.Name, pred.Node)}}}
	pred.Node = &ast.SequenceNode{Nodes: []ast.Node{tick, pred.Node}}
}

// rangeCall is a..b as _range(mem, a, b) when both sides may be integers
// (otherwise the checker reports the operands as it did).
func rangeCall(node *ast.Node, n *ast.BinaryNode) {
	if !mayBeInt(n.Left.Type()) || !mayBeInt(n.Right.Type()) {
		return
	}
	ast.Patch(node, &ast.CallNode{Callee: &ast.IdentifierNode{Value: "_range"}, Arguments: []ast.Node{memIdent(), n.Left, n.Right}})
}

// restoreConstRange turns _range(mem, 1, 10) back into 1..10, which expr
// computes when it compiles sum(1..10) or `x in 1..10` (x an integer).
func restoreConstRange(node *ast.Node) bool {
	c, ok := (*node).(*ast.CallNode)
	if !ok || len(c.Arguments) != 3 {
		return false
	}
	if id, ok := c.Callee.(*ast.IdentifierNode); !ok || id.Value != "_range" {
		return false
	}
	lo, ok1 := c.Arguments[1].(*ast.IntegerNode)
	hi, ok2 := c.Arguments[2].(*ast.IntegerNode)
	if !ok1 || !ok2 {
		return false
	}
	ast.Patch(node, &ast.BinaryNode{Operator: "..", Left: lo, Right: hi})
	return true
}

// chargedOp rewrites a op b, when its cost follows its operands, into
// `let a' = a; let b' = b; _cmp(mem, op, a', b'); a' op b'` (a constant
// operand stays in place: its cost is bounded by the program).
func (p *memPatcher) chargedOp(node *ast.Node, n *ast.BinaryNode) {
	if n.Operator == "in" && isInt(n.Left.Type()) && restoreConstRange(&n.Right) {
		return
	}
	if !costlyOp(n) {
		return
	}
	p.vars++
	var decls []*ast.VariableDeclaratorNode
	use := func(x ast.Node, side string) func() ast.Node {
		if isConstNode(x) {
			return func() ast.Node { return x }
		}
		name := fmt.Sprintf(" %s%d", side, p.vars) // not an identifier a program can write
		decls = append(decls, &ast.VariableDeclaratorNode{Name: name, Value: x})
		return func() ast.Node { return &ast.IdentifierNode{Value: name} }
	}
	l, r := use(n.Left, "a"), use(n.Right, "b")
	charge := &ast.CallNode{Callee: &ast.IdentifierNode{Value: "_cmp"}, Arguments: []ast.Node{
		memIdent(), &ast.StringNode{Value: n.Operator}, l(), r()}}
	var out ast.Node = &ast.SequenceNode{Nodes: []ast.Node{charge, &ast.BinaryNode{Operator: n.Operator, Left: l(), Right: r()}}}
	for i := len(decls) - 1; i >= 0; i-- {
		decls[i].Expr = out
		out = decls[i]
	}
	ast.Patch(node, out)
}

// chargedKey rewrites m[k], k computed and maybe a string, into
// `let k' = k; _cmp(mem, "[]", nil, k'); m[k']`: looking a long key up
// hashes all of it. An optional chain (a?.b[k]) is left as it is.
func (p *memPatcher) chargedKey(node *ast.Node, n *ast.MemberNode) {
	if n.Method || n.Optional || isConstNode(n.Property) || !mayBeString(n.Property.Type()) {
		return
	}
	if ast.Find(n.Node, isOptional) != nil {
		return
	}
	p.vars++
	name := fmt.Sprintf(" k%d", p.vars)
	charge := &ast.CallNode{Callee: &ast.IdentifierNode{Value: "_cmp"}, Arguments: []ast.Node{
		memIdent(), &ast.StringNode{Value: "[]"}, &ast.NilNode{}, &ast.IdentifierNode{Value: name}}}
	member := &ast.MemberNode{Node: n.Node, Property: &ast.IdentifierNode{Value: name}}
	ast.Patch(node, &ast.VariableDeclaratorNode{Name: name, Value: n.Property,
		Expr: &ast.SequenceNode{Nodes: []ast.Node{charge, member}}})
}

// chargedCall puts _method(mem, args…) in front of a method call
// (trigger.time.Format(layout)): what a method builds and costs follows
// its arguments. Computed arguments are evaluated into hidden variables
// first; an optional chain is left as it is.
func (p *memPatcher) chargedCall(node *ast.Node, n *ast.CallNode) {
	callee, ok := n.Callee.(*ast.MemberNode)
	if !ok || len(n.Arguments) == 0 || ast.Find(callee, isOptional) != nil {
		return
	}
	p.vars++
	charge := &ast.CallNode{Callee: &ast.IdentifierNode{Value: "_method"}, Arguments: []ast.Node{memIdent()}}
	call := &ast.CallNode{Callee: callee}
	var decls []*ast.VariableDeclaratorNode
	for i, a := range n.Arguments {
		if isConstNode(a) {
			charge.Arguments = append(charge.Arguments, a)
			call.Arguments = append(call.Arguments, a)
			continue
		}
		name := fmt.Sprintf(" m%d.%d", p.vars, i)
		decls = append(decls, &ast.VariableDeclaratorNode{Name: name, Value: a})
		charge.Arguments = append(charge.Arguments, &ast.IdentifierNode{Value: name})
		call.Arguments = append(call.Arguments, &ast.IdentifierNode{Value: name})
	}
	var out ast.Node = &ast.SequenceNode{Nodes: []ast.Node{charge, call}}
	for i := len(decls) - 1; i >= 0; i-- {
		decls[i].Expr = out
		out = decls[i]
	}
	ast.Patch(node, out)
}

func isOptional(x ast.Node) bool { m, ok := x.(*ast.MemberNode); return ok && m.Optional }

// memMethod is _method(mem, args…): a method call's operations, and what
// it may build (a time layout expands to at most about four times its
// length).
func memMethod(args ...any) (any, error) {
	m := memOf(args[0])
	args = args[1:]
	if err := m.tick("a method call", 1+work(args, m.opsLeft())); err != nil {
		return nil, err
	}
	n := 0
	for _, a := range args {
		if s, ok := a.(string); ok {
			n += len(s)
		}
	}
	return true, m.charge("a method call", mulSize(n, 4))
}

// costlyOp reports whether a op b may cost more than a constant: both
// operands computed (or, for in, contains and matches, the one walked),
// and neither known to be a number, a boolean or a time.
func costlyOp(n *ast.BinaryNode) bool {
	l, r := n.Left, n.Right
	switch n.Operator {
	case "in": // walks the list, or hashes the key
		return (!isConstNode(r) && !isScalar(r.Type())) || (!isConstNode(l) && mayBeString(l.Type()))
	case "contains", "matches":
		return !isConstNode(l) || !isConstNode(r)
	case "==", "!=", "<", ">", "<=", ">=", "startsWith", "endsWith":
		return !isConstNode(l) && !isConstNode(r) && !isScalar(l.Type()) && !isScalar(r.Type())
	}
	return false
}

var timeType = reflect.TypeOf(time.Time{})

// isScalar: a type whose comparison costs a constant.
func isScalar(t reflect.Type) bool {
	if t == nil {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return true
	}
	return t == timeType
}

func isInt(t reflect.Type) bool { return t != nil && t.Kind() == reflect.Int }

func mayBeInt(t reflect.Type) bool {
	return t == nil || t.Kind() == reflect.Interface || t.Kind() == reflect.Int
}

// opsMessage is the message of an evaluation past MaxEvalOps, or of a
// run past MaxRunOps.
func opsMessage(e *LimitError) string {
	if e.Limit == runOpsLimit {
		return fmt.Sprintf("%s would bring this run's evaluations to more than %d operations together (MaxRunOps): a loop of steps whose expressions each do much work", e.What, e.Max)
	}
	return fmt.Sprintf("%s would bring this evaluation to more than %d operations (MaxEvalOps): a loop or a walk over a large value", e.What, e.Max)
}
