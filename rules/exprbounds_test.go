package rules

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
)

// Issue 14, second round: what the attacker broke after the byte budgets
// landed (templates built before they were measured, groupBy and other
// builders outside the budget, sizes measured without JSON escapes,
// evaluations without a CPU bound).

func boundsProg(steps string) string {
	return `{"name":"bomb","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":` + steps + `}`
}

// members is n JSON members "k0": v, "k1": v, … (or n list elements).
func members(n int, v string, list bool) string {
	parts := make([]string, n)
	for i := range parts {
		if list {
			parts[i] = v
		} else {
			parts[i] = fmt.Sprintf("%q:%s", fmt.Sprintf("k%d", i), v)
		}
	}
	return strings.Join(parts, ",")
}

// TestIssue14TemplatesChargeAsTheyBuild: an object or list template, and
// a set step with many values, used to build every member before the
// result was measured. Each member is charged as it is made.
func TestIssue14TemplatesChargeAsTheyBuild(t *testing.T) {
	big := `"{{ repeat('x', 1000000) }}"`
	ref := `"{{ vars.s }}"`
	init := `{"id":"a","set":{"s":"{{ repeat('y', 600000) }}"}},`
	tests := []struct{ name, src, limit string }{
		{"object template", boundsProg(`[{"id":"b","set":{"v":{` + members(300, big, false) + `}}}]`), "MaxValueBytes"},
		{"list template", boundsProg(`[{"id":"b","set":{"v":[` + members(300, big, true) + `]}}]`), "MaxValueBytes"},
		{"nested templates", boundsProg(`[{"id":"b","set":{"v":{"a":[{"x":` + big + `}],"b":[` + members(100, `{"y":`+big+`}`, true) + `]}}}]`), "Max"},
		{"object of references", boundsProg(`[` + init + `{"id":"b","set":{"v":{` + members(3000, ref, false) + `}}}]`), "MaxValueBytes"},
		{"many set values", boundsProg(`[{"id":"b","set":{` + members(300, big, false) + `}}]`), "MaxRunBytes"},
		{"call argument text", boundsProg(`[` + init + `{"id":"b","call":"notify.phone","args":{"message":"` + strings.Repeat("{{ vars.s }}", 300) + `"}}]`), "MaxValueBytes"},
		{"interpolated text", boundsProg(`[` + init + `{"id":"b","set":{"v":"` + strings.Repeat("{{ vars.s }}", 300) + `"}}]`), "MaxValueBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := DefaultLimits
			lim.MaxProgramBytes = 1 << 20
			start := time.Now()
			res, alloc := memRun(t, tt.src, lim)
			if d := time.Since(start); d > 5*time.Second*raceSlowdown() {
				t.Errorf("took %v", d)
			}
			if res.Outcome.Status != StatusLimitExceeded || !strings.Contains(res.Outcome.Error, tt.limit) || !strings.Contains(res.Outcome.Error, `"b"`) {
				t.Fatalf("outcome %+v, want limit_exceeded at step b naming %s", res.Outcome, tt.limit)
			}
			t.Logf("%s (allocated %d kB)", res.Outcome.Error, alloc>>10)
			if alloc > memCeiling {
				t.Errorf("allocated %d MB, ceiling %d MB", alloc>>20, memCeiling>>20)
			}
		})
	}
}

// TestIssue14BuildersAreBudgeted: every expr builtin and operator that can
// build something proportional to its input is bounded by the byte and
// operation budgets (groupBy over a million items succeeded). Each of these ends limit_exceeded, quickly, having
// allocated a bounded amount.
func TestIssue14BuildersAreBudgeted(t *testing.T) {
	exprs := []string{
		"len(groupBy(1..1000000, #))", // the attacker's
		"len(groupBy(1..130000, #))",
		"len(groupBy(1..130000, # % 2))",
		"len(groupBy(concat(1..130000, 1..130000), # % 2))",
		"len(sortBy(1..130000, -#))",
		"len(map(1..130000, #)) + len(filter(1..130000, true))",
		"len(map(1..130000, [#, #]))",
		"len(reduce(1..1000000, #acc + 'x', ''))",
		"len(reduce(1..100000, concat(#acc, [#]), []))",
		"len(toPairs(groupBy(1..300000, #)))",
		"len(keys(groupBy(1..300000, #)))",
		"len(values(groupBy(1..300000, #)))",
		"len(fromPairs(map(1..300000, [string(#), #])))",
		"len(concat(1..500000, 1..500000))",
		"len(flatten(map(1..1000, 1..1000)))",
		"len(reverse(1..1000000))",
		"len(sort(1..1000000))",
		"len(uniq(1..100000))",
		"len(take(1..1000000, 1000000))",
		"len(string(1..1000000))",
		"len(toJSON(1..1000000))",
		"len(join(map(1..1000000, 'x'), ''))",
		"len(split(repeat('x,', 500000), ','))",
		"len(1..1000000 | map(# * 2) | filter(# > 5))",
		"len(fromJSON(toJSON(1..300000)))",
		"len(map(1..1000, [{a: 1..1000}]))",
		"len(map(1..200000, [#, #, #, #, #, #, #, #]))",
		"len(1..100000000)",
		"len(toBase64(repeat('x', 900000)))",
		"median(1..1000000)",
		"max(map(1..1000, 1..1000))",
	}
	for _, x := range exprs {
		t.Run(x, func(t *testing.T) {
			src := boundsProg(`[{"id":"b","set":{"v":"{{ ` + x + ` }}"}}]`)
			start := time.Now()
			res, alloc := memRun(t, src, DefaultLimits)
			if d := time.Since(start); d > 5*time.Second*raceSlowdown() {
				t.Errorf("took %v", d)
			}
			if res.Outcome.Status != StatusLimitExceeded {
				t.Fatalf("outcome %+v, want limit_exceeded", res.Outcome)
			}
			t.Logf("%s (allocated %d kB)", res.Outcome.Error, alloc>>10)
			if alloc > memCeiling {
				t.Errorf("allocated %d MB, ceiling %d MB", alloc>>20, memCeiling>>20)
			}
		})
	}
}

// slow is how much slower the race detector makes an evaluation.
func slow() time.Duration {
	if raceEnabled {
		return 8
	}
	return 1
}

// runWithin runs src's first trigger against a SimWorld, failing the test
// when the run has not ended after d (the run is then left to itself).
func runWithin(t *testing.T, ctx context.Context, src string, lim Limits, d time.Duration) *RunResult {
	t.Helper()
	res, err := Validate([]byte(src), demoCatalog(), ValidateOptions{Limits: lim, Cache: itCache})
	if err != nil || !res.Valid {
		t.Fatalf("program does not validate: %v %+v", err, res.Diagnostics)
	}
	w := NewSimWorld(func(string) (any, bool) { return nil, false }, itStart, Scenario{}, nil)
	fire, err := FireFor(res.Compiled, Scenario{}, w)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *RunResult, 1)
	go func() {
		done <- Run(ctx, res.Compiled, w, RunInput{Trigger: fire, Limits: lim, Cache: itCache})
	}()
	select {
	case r := <-done:
		return r
	case <-time.After(d):
		t.Fatalf("the run has not ended after %v", d)
	}
	return nil
}

// cpuBomb is the attacker's program: a list of 90,000 numbers, then three
// nested sums over it (7e14 additions).
const cpuBomb = `{"name":"cpu","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"a","set":{"l":"{{ 1..90000 }}"}},{"id":"d","set":{"v":"{{ sum(vars.l, sum(vars.l, sum(vars.l, #))) }}"}}]}`

// cpuTime is the CPU time this process has used (wall time misleads on a
// shared machine: these tests bound work, not the scheduler).
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestIssue14EvalOpsBound: one evaluation may not run forever. The
// attacker's program ends within a second (of CPU) with limit_exceeded
// naming MaxEvalOps, and so does every loop construct and every operation
// whose cost grows with its input, nested in a loop.
func TestIssue14EvalOpsBound(t *testing.T) {
	start, cpu := time.Now(), cpuTime(t)
	res := runWithin(t, context.Background(), cpuBomb, DefaultLimits, 10*slow()*time.Second)
	if res.Outcome.Status != StatusLimitExceeded || !strings.Contains(res.Outcome.Error, "MaxEvalOps") || !strings.Contains(res.Outcome.Error, `"d"`) {
		t.Fatalf("outcome %+v", res.Outcome)
	}
	if used := cpuTime(t) - cpu; used > slow()*time.Second {
		t.Errorf("the run used %v of CPU", used)
	}
	t.Logf("%s in %v (%v of CPU)", res.Outcome.Error, time.Since(start), cpuTime(t)-cpu)

	init := `{"id":"a","set":{"l":"{{ 1..90000 }}","s":"{{ repeat('x', 500000) }}","s2":"{{ repeat('x', 499999) + 'y' }}","w":"{{ map(1..1000, 'word') }}","small":"{{ 1..1000 }}","m":"{{ fromJSON('{' + join(map(1..1000, '\"k' + string(#) + '\":1'), ',') + '}') }}"}},`
	exprs := []string{
		"sum(vars.l, sum(vars.l, #))",
		"sum(vars.l, sum(vars.l))",
		"all(vars.l, all(vars.l, # > 0))",
		"any(vars.l, any(vars.l, # < 0))",
		"none(vars.l, !none(vars.l, # < 0))",
		"one(vars.l, one(vars.l, # == 0))",
		"count(vars.l, count(vars.l, # > 0) == 90000)",
		"find(vars.l, find(vars.l, # < 0) != nil)",
		"findIndex(vars.l, findIndex(vars.l, # < 0) != nil)",
		"findLast(vars.l, findLast(vars.l, # < 0) != nil)",
		"findLastIndex(vars.l, findLastIndex(vars.l, # < 0) != nil)",
		"reduce(vars.l, #acc + sum(vars.l), 0)",
		"len(filter(vars.l, len(filter(vars.l, # < 0)) > 0))",
		"len(groupBy(vars.small, sum(vars.l)))",
		"len(sortBy(vars.small, sum(vars.l)))",
		"all(vars.l, -1 not in vars.l)",
		"all(vars.l, vars.l == vars.l)",
		"all(vars.l, vars.s != vars.s2)",
		"all(vars.l, vars.s < vars.s2)",
		"none(vars.l, vars.s contains 'y')",
		"none(vars.l, vars.s matches 'y')",
		"all(vars.l, vars.s2 endsWith vars.s2)",
		"all(vars.l, len(upper(vars.s)) > 0)",
		"all(vars.l, max(vars.l) > 0)",
		"all(vars.l, len(uniq(vars.small)) > 0)",
		"all(vars.l, indexOf(vars.s, 'y') < 0)",
		"all(vars.l, len(trim(vars.s)) > 0)",
		"all(vars.l, len(join(vars.w, ',')) > 0)",
		"all(vars.l, len(toJSON(vars.small)) > 0)",
		"all(vars.l, len(sort(vars.small)) > 0)",
		"all(vars.l, len(keys(vars.m)) > 0)",
		"all(vars.l, vars.m[vars.s] == nil)",
		"all(vars.l, get(vars.m, vars.s) == nil)",
		"none(vars.l, vars.s in ['a', 'b'])",
		"all(vars.l, len(now().Format(vars.s)) > 0)",
		"all(vars.l, len(trigger.time.Format(vars.s)) > 0)",
		"all(vars.l, date('2024-01-02', '2006-01-02', 'Europe/Paris') != nil)",
	}
	lim := DefaultLimits
	lim.MaxEvalOps = 200_000 // a fifth: the same bounds, five times faster
	for _, x := range exprs {
		t.Run(x, func(t *testing.T) {
			src := boundsProg(`[` + init + `{"id":"d","set":{"v":"{{ ` + x + ` }}"}}]`)
			start := time.Now()
			res := runWithin(t, context.Background(), src, lim, 10*slow()*time.Second)
			if res.Outcome.Status != StatusLimitExceeded || !strings.Contains(res.Outcome.Error, `"d"`) {
				t.Fatalf("outcome %+v", res.Outcome)
			}
			t.Logf("%s in %v", res.Outcome.Error, time.Since(start))
		})
	}
}

// TestIssue14EvalStopsWhenCancelled: an evaluation checks the run's
// context as it goes (it was only checked between steps: a client that
// went away left a core burning). With the operation budget out of the
// way, cancelling the context ends the running evaluation within 100 ms
// (of CPU: on a busy machine the scheduler adds its own delay), and a
// deadline ends it as a timeout.
func TestIssue14EvalStopsWhenCancelled(t *testing.T) {
	// 2.4e12 additions over a short list: the first step takes no time.
	endless := boundsProg(`[{"id":"a","set":{"l":"{{ 1..300 }}"}},{"id":"d","set":{"v":"{{ sum(vars.l, sum(vars.l, sum(vars.l, sum(vars.l, sum(vars.l, #))))) }}"}}]`)
	lim := DefaultLimits
	lim.MaxEvalOps, lim.MaxRunOps = math.MaxInt64, math.MaxInt64
	for _, deadline := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		ended := time.Now().Add(300 * time.Millisecond)
		want := StatusCancelled
		if deadline {
			ctx, cancel = context.WithDeadline(context.Background(), ended)
			want = StatusTimeout
		} else {
			time.AfterFunc(time.Until(ended), cancel)
		}
		// The AfterFunc runs on its own goroutine: on a busy machine it
		// may run after the evaluation returned, so wait for its reading.
		atEnd := make(chan time.Duration, 1)
		context.AfterFunc(ctx, func() { atEnd <- cpuTime(t) })
		res := runWithin(t, ctx, endless, lim, 10*time.Second)
		took := time.Since(ended)
		used := cpuTime(t) - <-atEnd
		cancel()
		if res.Outcome.Status != want || !strings.Contains(res.Outcome.Error, `"d"`) {
			t.Fatalf("outcome %+v, want %s at step d", res.Outcome, want)
		}
		if used > 100*time.Millisecond {
			t.Errorf("the run used %v of CPU after its context ended", used)
		}
		t.Logf("%s: %s, %v (%v of CPU) after the context ended", want, res.Outcome.Error, took, used)
	}
}

// TestMeasureIsTheEncodedSize: a value's measured size is the length of
// json.Marshal's encoding, escapes included (a string of control
// characters is up to six times its length once stored).
func TestMeasureIsTheEncodedSize(t *testing.T) {
	rnd := rand.New(rand.NewSource(1))
	alphabet := []string{"a", "\x01", "\n", "\t", `"`, `\`, "<", ">", "&", "é", "😀", "\u2028", "\u2029", "\xff", "\xe2\x80", "\x7f", "\b", "\f"}
	randString := func() string {
		var b strings.Builder
		for range rnd.Intn(20) {
			b.WriteString(alphabet[rnd.Intn(len(alphabet))])
		}
		return b.String()
	}
	nums := []any{0, -1, 7, 1234567, math.MaxInt64, math.MinInt64, 0.5, math.Copysign(0, -1), 1e21, 1e-7, 123456789.125, -3.25e-300, 1e15, 99999999999999.0, 2.5e20}
	var value func(depth int) any
	value = func(depth int) any {
		switch k := rnd.Intn(7); {
		case k == 0 && depth < 4:
			m := map[string]any{}
			for range rnd.Intn(4) {
				m[randString()] = value(depth + 1)
			}
			return m
		case k == 1 && depth < 4:
			l := make([]any, rnd.Intn(4))
			for i := range l {
				l[i] = value(depth + 1)
			}
			return l
		case k == 2:
			return nums[rnd.Intn(len(nums))]
		case k == 3:
			return rnd.Intn(2) == 0
		case k == 4:
			return nil
		}
		return randString()
	}
	for i := range 2000 {
		v := value(0)
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := core.Measure(v, math.MaxInt, false); got.Bytes != len(b) {
			t.Fatalf("case %d: measured %d, encoded %d: %s", i, got.Bytes, len(b), b)
		}
	}
}

// TestIssue14EnvelopeIsBoundedEncoded: ten 150,000-character strings of
// control characters used to be measured by their length rather than
// their encoding, so a bounded run stored more than its bound. The run's record
// (trace, calls and output, as the engine stores it) stays within
// MaxRunBytes and a small overhead, and a single value of a million
// control characters is past MaxValueBytes.
func TestIssue14EnvelopeIsBoundedEncoded(t *testing.T) {
	src := boundsProg(`[{"id":"r","repeat":{"count":10},"do":[{"id":"d","set":{"v":"{{ repeat('\u0001', 150000) }}"}}]}]`)
	res, _ := memRun(t, src, DefaultLimits)
	if res.Outcome.Status != StatusLimitExceeded || !strings.Contains(res.Outcome.Error, "MaxRunBytes") {
		t.Fatalf("outcome %+v", res.Outcome)
	}
	env := map[string]any{"run_id": "run_x", "outcome": res.Outcome, "output": res.Output,
		"trace": pilotage.Trace{Level: pilotage.LevelFull, Steps: res.Steps}, "calls": res.Calls}
	b, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > DefaultLimits.MaxRunBytes+envelopeSlack {
		t.Errorf("the run's record is %d bytes encoded, MaxRunBytes %d", len(b), DefaultLimits.MaxRunBytes)
	}
	t.Logf("%s: %d bytes encoded", res.Outcome.Error, len(b))

	// The output variables are part of the record too: a value kept in
	// vars is stored twice (the step's output and the run's output).
	src = boundsProg(`[{"id":"a","set":{"v":"{{ repeat('x', 1000000) }}"}},{"id":"b","set":{"w":"{{ repeat('x', 1000000) }}"}},{"id":"c","set":{"u":"{{ repeat('x', 1000000) }}"}}]`)
	res, _ = memRun(t, src, DefaultLimits)
	b, _ = json.Marshal(map[string]any{"output": res.Output, "trace": res.Steps})
	if len(b) > DefaultLimits.MaxRunBytes+envelopeSlack {
		t.Errorf("outcome %s: the run's record is %d bytes encoded, MaxRunBytes %d", res.Outcome.Status, len(b), DefaultLimits.MaxRunBytes)
	}

	src = boundsProg(`[{"id":"d","set":{"v":"{{ repeat('\u0001', 1000000) }}"}}]`)
	res, _ = memRun(t, src, DefaultLimits)
	if res.Outcome.Status != StatusLimitExceeded || !strings.Contains(res.Outcome.Error, "MaxValueBytes") {
		t.Fatalf("a million control characters: outcome %+v", res.Outcome)
	}
}

// envelopeSlack is what a run's record may hold beyond MaxRunBytes: the
// outcome's message and the few entries a halt marks with it.
const envelopeSlack = 64 << 10
