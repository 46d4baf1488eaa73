package model

// Compiled expressions: compiled once when a program is validated, run
// many times against an Env (expr_env.go).

import (
	"fmt"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"

	"github.com/pilothouse/pilothouse/rules/internal/core"
)

// Expr is one compiled expression. It is compiled once, when the program is
// validated, and evaluated many times; the hot path never parses.
type Expr struct {
	Src    string    // the expression text (without {{ }})
	Ptr    string    // JSON Pointer of the string value that holds it
	Offset int       // rune offset of Src inside that string value
	Refs   []Ref     // catalog ids referenced through state('…'), since('…'), last_changed('…')
	Sels   []SelRead // selector objects read through states({…}), since({…})
	prog   *vm.Program

	// Paths are the variable paths it names (trace reads, reads.go);
	// omitted counts those past maxReads.
	Paths   []readPath
	Omitted int

	// reach is what the compiled program can reach of its environment
	// (reach* bits), computed when the program is compiled: an Expr is
	// immutable once made (held programs share them).
	reach uint32
}

const (
	reachKnown   = 1 << iota
	reachEnv     // loads $env: the environment map itself can escape as a value
	reachTrigger // may read trigger
	reachParams  // may read params
	reachVars    // may read vars
	reachSteps   // may read steps
	reachAll     = reachEnv | reachTrigger | reachParams | reachVars | reachSteps
)

var reachNames = map[string]uint32{"trigger": reachTrigger, "params": reachParams, "vars": reachVars, "steps": reachSteps}

// reaches reports what x's program can read of the environment. A program
// names an environment variable by a constant (OpLoadFast "vars" on a map
// environment; a field path on a struct one), and the whole environment
// by OpLoadEnv ($env). Any constant with a variable's name counts, so a
// string literal of that text only costs the variable's binding.
func (x *Expr) reaches() uint32 {
	if x.reach != 0 {
		return x.reach
	}
	return reachOf(x.prog)
}

func reachOf(prog *vm.Program) uint32 {
	f := uint32(reachKnown)
	if prog == nil {
		f |= reachAll
	} else {
		for _, op := range prog.Bytecode {
			if op == vm.OpLoadEnv {
				f |= reachAll
			}
		}
		for _, c := range prog.Constants {
			switch c := c.(type) {
			case string:
				f |= reachNames[c]
			case *runtime.Field:
				for _, name := range c.Path {
					f |= reachNames[name]
				}
			}
		}
	}
	return f
}

// newExpr is the one way an Expr is made from a compiled program.
func newExpr(src string, prog *vm.Program) *Expr {
	paths, omitted := collectPaths(prog.Node())
	return &Expr{Src: src, prog: prog, Refs: collectRefs(prog.Node()), Sels: collectSels(prog.Node()), reach: reachOf(prog), Paths: paths, Omitted: omitted}
}

// Ref is one catalog id named inside an expression, with its rune offsets
// inside the expression source (for diagnostic ranges).
type Ref struct {
	ID       string
	From, To int
	Fn       string // the reader: state, since or last_changed
}

// CompileExpr compiles src in the closed environment. maxNodes bounds the
// AST (0 = DefaultLimits.MaxExprNodes). The error, when not nil, is an
// *expr file.Error carrying the position inside src where possible.
func CompileExpr(src string, maxNodes uint) (*Expr, error) {
	if maxNodes == 0 {
		maxNodes = core.DefaultLimits.MaxExprNodes
	}
	p, err := expr.Compile(src, exprOptions(maxNodes)...)
	if err != nil {
		return nil, err
	}
	return newExpr(src, p), nil
}

// collectRefs finds every call of a catalog reader (state('id'),
// since('id'), last_changed('id')). Non-constant arguments are
// reported by the validator (see NonConstantRefs).
func collectRefs(root ast.Node) []Ref {
	var refs []Ref
	ast.Find(root, func(n ast.Node) bool {
		c, ok := n.(*ast.CallNode)
		if !ok || len(c.Arguments) != 1 {
			return false
		}
		fn, ok := c.Callee.(*ast.IdentifierNode)
		if !ok || !CatalogReaders[fn.Value] {
			return false
		}
		if s, ok := c.Arguments[0].(*ast.StringNode); ok {
			loc := s.Location()
			refs = append(refs, Ref{ID: s.Value, From: loc.From, To: loc.To, Fn: fn.Value})
		}
		return false
	})
	return refs
}

// Node returns the expression's AST (for validation passes).
func (x *Expr) Node() ast.Node { return x.prog.Node() }

// Eval runs the expression against env, as one evaluation.
func (x *Expr) Eval(env *Env) (any, error) {
	env.beginEval()
	out, err := x.run(env)
	env.endEval()
	return out, err
}

// run runs the expression within the evaluation under way (an expression
// of a template shares the template's budget).
func (x *Expr) run(env *Env) (any, error) {
	vars := env.vars(x.reaches())
	v := env.Cache.vm()
	v.MemoryBudget = env.budget()
	out, err := v.Run(x.prog, vars)
	env.Cache.putVM(v)
	if err == nil {
		err = env.mem.resultFits(out)
	}
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", x.Src, err)
	}
	return out, nil
}

// EvalBool runs the expression and requires a boolean result.
func (x *Expr) EvalBool(env *Env) (bool, error) {
	v, err := x.Eval(env)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("expression %q: got %T, want bool", x.Src, v)
	}
	return b, nil
}

// CatalogReaders are the environment functions that read catalog entries:
// each use must be a direct call with a string constant id, so that every
// entry a program can read is known before it runs (plan, references,
// scope). since and states take a selector object instead (expr_sel.go).
var CatalogReaders = map[string]bool{"state": true, "since": true, "last_changed": true, "available": true, "states": true, "entities": true}
