package validate

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/decode"
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"github.com/expr-lang/expr/ast"

	"github.com/pilothouse/pilothouse/pilotage"
)

// comparisons reports an expression that compares a state with a constant
// its output_schema can never report (state('hall_light.state') == 'on'
// for a light that reports "ON"): the comparison always comes out the
// same, the mistake a trigger's `to` gets unreachable_value for.
func (c *checker) comparisons(x *model.Expr, rng func(int, int) *pilotage.Range) {
	ast.Find(x.Node(), func(n ast.Node) bool {
		b, ok := n.(*ast.BinaryNode)
		if !ok || (b.Operator != "==" && b.Operator != "!=") {
			return false
		}
		id, lit, ok := stateVsConst(b.Left, b.Right)
		if !ok {
			id, lit, ok = stateVsConst(b.Right, b.Left)
		}
		if !ok {
			return false
		}
		e, found := c.cat.Get(id)
		if !found || e.Kind != pilotage.KindState || len(e.OutputSchema) == 0 {
			return false
		}
		sch := c.schema("out:"+e.ID, e.OutputSchema)
		if sch == nil {
			return false
		}
		if err := sch.Validate(lit); err != nil {
			from, to := nodeSpan(b)
			c.d.Add(core.CodeUnreachableValue, x.Ptr, outputHint(e), "%s never reports %s, so %s is always %t: %s",
				id, core.CompactJSON(lit), b.Operator, b.Operator == "!=", decode.FirstLeafMessage(err)).Range = rng(from, max(to, from+1))
		}
		return false
	})
}

// stateVsConst matches state('<id>') against a constant string, number or
// boolean.
func stateVsConst(call, other ast.Node) (string, any, bool) {
	cn, ok := call.(*ast.CallNode)
	if !ok || len(cn.Arguments) != 1 {
		return "", nil, false
	}
	fn, ok := cn.Callee.(*ast.IdentifierNode)
	arg, isStr := cn.Arguments[0].(*ast.StringNode)
	if !ok || fn.Value != "state" || !isStr {
		return "", nil, false
	}
	switch o := other.(type) {
	case *ast.StringNode:
		return arg.Value, o.Value, true
	case *ast.BoolNode:
		return arg.Value, o.Value, true
	case *ast.IntegerNode:
		return arg.Value, float64(o.Value), true
	case *ast.FloatNode:
		return arg.Value, o.Value, true
	}
	return "", nil, false
}
