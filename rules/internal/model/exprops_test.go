package model

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// costly are the operations whose work grows with their input, each
// written over vars.l (a list of n numbers), vars.w (n words), vars.s (a
// string of n bytes) or n itself ({n}).
var costly = []string{
	"1..{n}",
	"sum(1..{n}, #)",
	"sum(map(1..{n}, # * 2))",
	"filter(vars.l, # % 2 == 0)",
	"reduce(vars.l, #acc + #, 0)",
	"all(vars.l, # * 2 + # * 3 + # * 4 + # * 5 >= 0)",
	"sortBy(vars.l, -#)",
	"groupBy(vars.l, #)",
	"sort(vars.l)",
	"reverse(vars.l)",
	"concat(vars.l, vars.l)",
	"flatten([vars.l, vars.l])",
	"toJSON(vars.l)",
	"string(vars.l)",
	"join(vars.w, ',')",
	"repeat('x', {n})",
	"repeat('ab', {n})",
	"replace(vars.s, 'a', 'bb')",
	"split(vars.s, '')",
	"upper(vars.s)",
	"toBase64(vars.s)",
	"vars.s + vars.s",
	"[vars.l]",
	"{a: vars.l}",
	"get(vars, 'l')",
	"vars.l",
	"fromJSON(toJSON(vars.w))",
}

// opsEnv is the environment of costly at size n, with budgets out of the
// way.
func opsEnv(n int) *Env {
	l, w := make([]any, n), make([]any, n)
	for i := range l {
		l[i], w[i] = i, "word"
	}
	vars := map[string]any{"l": l, "w": w, "s": strings.Repeat("a", n)}
	return &Env{Vars: vars, EvalOps: 1 << 40, ValueBytes: 1 << 30, EvalBytes: 1 << 32, Budget: 1 << 30}
}

// opsOf evaluates src at size n and says how many operations it counted.
func opsOf(t testing.TB, src string, env *Env, n int) int {
	t.Helper()
	x, err := CompileExpr(strings.ReplaceAll(src, "{n}", fmt.Sprint(n)), 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Eval(env); err != nil {
		t.Fatal(err)
	}
	return env.mem.ops
}

// TestCostlyOpsGrowWithInput: what each costly operation counts grows with
// its input (repeat, a list literal, get and an evaluation's result were
// counted a few operations however large what they built or walked).
func TestCostlyOpsGrowWithInput(t *testing.T) {
	small, large := opsEnv(1000), opsEnv(10000)
	for _, src := range costly {
		t.Run(src, func(t *testing.T) {
			a, b := opsOf(t, src, small, 1000), opsOf(t, src, large, 10000)
			if b < 5*a || b < 10000/16 {
				t.Errorf("%d operations at 1,000, %d at 10,000: not proportional to the work", a, b)
			}
		})
	}
}

// cpuNow is the CPU time this process has used.
func cpuNow(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// maxNsPerOp is the CPU one counted operation may take, measured: about
// 50 ns is the unit (exprops.go); three times that leaves room for a
// loaded machine. The old counting took 300 ns per loop iteration, 1 µs
// per groupBy iteration, 600 ns per range operation, 60 µs per repeat
// operation, 0.5 ms per list literal operation.
const maxNsPerOp = 150

// TestCostlyOpsCostTheirCPU: no costly operation takes more CPU per
// counted operation than maxNsPerOp (at 100,000 items: large enough for
// the collector's share to show). Timing: skipped with -short and the race
// detector.
func TestCostlyOpsCostTheirCPU(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("measures CPU time")
	}
	const n = 100000
	env := opsEnv(n)
	for _, src := range costly {
		t.Run(src, func(t *testing.T) {
			ns, ops := nsPerOp(t, src, env, n)
			t.Logf("%.0f ns of CPU per operation (%d operations)", ns, ops)
			if ns > maxNsPerOp {
				t.Errorf("%.0f ns of CPU per counted operation (%d operations), want at most %d", ns, ops, maxNsPerOp)
			}
		})
	}
}

// nsPerOp is the CPU one of src's operations takes at size n, the best
// of three rounds of 100 ms (another process's load only adds).
func nsPerOp(t testing.TB, src string, env *Env, n int) (float64, int) {
	best, ops := 0.0, 0
	for range 3 {
		runs, start := 0, cpuNow(t)
		for cpuNow(t)-start < 100*time.Millisecond {
			ops = opsOf(t, src, env, n)
			runs++
		}
		ns := float64(cpuNow(t)-start) / float64(runs) / float64(max(ops, 1))
		if best == 0 || ns < best {
			best = ns
		}
	}
	return best, ops
}
