package rules

import (
	"errors"
	"sync"

	"github.com/expr-lang/expr"
	exprchecker "github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
)

// exprConfigPools hold prepared expr configurations by node bound.
// expr.Compile builds its configuration (builtins table, typed environment)
// anew for every expression, which dominated validation time; the decoder
// compiles many expressions, so it reuses prepared configurations, one user
// at a time. The result is the same as CompileExpr's
// (TestCompileExprPooledMatches).
var exprConfigPools sync.Map // uint → *sync.Pool of *conf.Config

func exprConfigPool(maxNodes uint) *sync.Pool {
	if p, ok := exprConfigPools.Load(maxNodes); ok {
		return p.(*sync.Pool)
	}
	p, _ := exprConfigPools.LoadOrStore(maxNodes, &sync.Pool{New: func() any {
		c := conf.CreateNew()
		for _, op := range []expr.Option{expr.Env(compileEnv), expr.DisableBuiltin("now"), expr.MaxNodes(maxNodes)} {
			op(c)
		}
		for name := range c.Disabled {
			delete(c.Builtins, name)
		}
		c.Check()
		return c
	}})
	return p.(*sync.Pool)
}

// compileExprPooled is CompileExpr over a reused configuration.
func compileExprPooled(src string, maxNodes uint) (*Expr, error) {
	if maxNodes == 0 {
		maxNodes = DefaultLimits.MaxExprNodes
	}
	pool := exprConfigPool(maxNodes)
	cfg := pool.Get().(*conf.Config)
	defer pool.Put(cfg)
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
	x := &Expr{Src: src, prog: prog}
	x.Refs = collectRefs(prog.Node())
	return x, nil
}
