package model

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"

	"errors"

	exprchecker "github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
)

// newExprConfig prepares the expr configuration of automation/1
// expressions, as expr.Compile does for every expression it compiles.
func newExprConfig(maxNodes uint) *conf.Config {
	c := conf.CreateNew()
	for _, op := range exprOptions(maxNodes) {
		op(c)
	}
	for name := range c.Disabled {
		delete(c.Builtins, name)
	}
	c.Check()
	return c
}

// compileExpr is CompileExpr over a configuration lent by k, sharing the
// program of an identical expression compiled before. The result is the
// same as CompileExpr's (TestCompileExprPooledMatches).
func (k *Cache) CompileExpr(src string, maxNodes uint) (*Expr, error) {
	if maxNodes == 0 {
		maxNodes = core.DefaultLimits.MaxExprNodes
	}
	key := exprKey{src, maxNodes}
	if prog := k.program(key); prog != nil {
		return newExpr(src, prog), nil
	}
	cfg, done := k.config(maxNodes)
	defer done()
	x, err := compileWith(src, cfg)
	if err != nil {
		return nil, err
	}
	k.keepProgram(key, x.prog)
	return x, nil
}

// compileWith is expr.Compile's body over a prepared configuration.
//
// Why a copy of expr.Compile: it builds its configuration (the builtins
// table, the typed environment, our budgeted functions) anew for every
// expression, and that dominated validation time. expr offers no entry
// point taking a prepared *conf.Config, and an Option cannot hand one in:
// it would share the configuration's type cache (NtCache), which the
// checker fills, between concurrent compilations. So this runs expr's own
// public steps (checker.ParseCheck, optimizer.Optimize, compiler.Compile)
// in expr.Compile's order (v1.17.8, expr.go).
func compileWith(src string, cfg *conf.Config) (*Expr, error) {
	tree, err := exprchecker.ParseCheck(src, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Optimize {
		if err := optimizer.Optimize(&tree.Node, cfg); err != nil {
			var fe *file.Error
			if errors.As(err, &fe) {
				return nil, fe.Bind(tree.Source)
			}
			return nil, err
		}
	}
	prog, err := compiler.Compile(tree, cfg)
	if err != nil {
		return nil, err
	}
	return newExpr(src, prog), nil
}
