package rules

import (
	"errors"
	"runtime"
	"sync"
	"weak"

	exprchecker "github.com/expr-lang/expr/checker"
	"github.com/expr-lang/expr/compiler"
	"github.com/expr-lang/expr/conf"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/optimizer"
	"github.com/expr-lang/expr/vm"
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
		for _, op := range exprOptions(maxNodes) {
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

// compiledExprs shares compiled programs between expressions with the same
// source: a house's rules repeat expressions ("trigger.value",
// "state('sun.elevation') < 3"), and a compiled program (bytecode, constants,
// its syntax tree) is immutable and safe for concurrent VMs. Entries are
// weak: a program no installed rule uses any more is collected, and its
// entry removed.
var compiledExprs = struct {
	sync.Mutex
	m map[exprKey]weak.Pointer[vm.Program]
}{m: map[exprKey]weak.Pointer[vm.Program]{}}

type exprKey struct {
	src      string
	maxNodes uint
}

// compileExprPooled is CompileExpr over a reused configuration, sharing
// the program of an identical expression compiled before.
func compileExprPooled(src string, maxNodes uint) (*Expr, error) {
	if maxNodes == 0 {
		maxNodes = DefaultLimits.MaxExprNodes
	}
	k := exprKey{src, maxNodes}
	compiledExprs.Lock()
	wp, ok := compiledExprs.m[k]
	compiledExprs.Unlock()
	if ok {
		if prog := wp.Value(); prog != nil {
			return newExpr(src, prog), nil
		}
	}
	x, err := compileExprFresh(src, maxNodes)
	if err != nil {
		return nil, err
	}
	compiledExprs.Lock()
	if old, ok := compiledExprs.m[k]; !ok || old.Value() == nil {
		wp := weak.Make(x.prog)
		compiledExprs.m[k] = wp
		runtime.AddCleanup(x.prog, func(k exprKey) {
			compiledExprs.Lock()
			if compiledExprs.m[k] == wp {
				delete(compiledExprs.m, k)
			}
			compiledExprs.Unlock()
		}, k)
	}
	compiledExprs.Unlock()
	return x, nil
}

func compileExprFresh(src string, maxNodes uint) (*Expr, error) {
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
	return newExpr(src, prog), nil
}
