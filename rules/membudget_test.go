package rules

import (
	"context"
	"encoding/json"
	"math/rand"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"
)

// memRun validates src against the demo catalog and test-runs it in a
// SimWorld from its first trigger, reporting the bytes allocated meanwhile
// (runtime.MemStats.TotalAlloc: every allocation, so a transient spike
// counts as much as what is kept).
func memRun(t testing.TB, src string, lim Limits) (*RunResult, uint64) {
	t.Helper()
	res, err := Validate([]byte(src), demoCatalog(), ValidateOptions{Limits: lim, Cache: itCache})
	if err != nil || !res.Valid {
		t.Fatalf("program does not validate: %v %+v", err, res.Diagnostics)
	}
	c := res.Compiled
	w := NewSimWorld(func(string) (any, bool) { return nil, false }, itStart, Scenario{}, nil)
	fire, err := FireFor(c, Scenario{}, w)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out := Run(context.Background(), c, w, RunInput{Trigger: fire, Limits: lim, Cache: itCache})
	runtime.ReadMemStats(&after)
	if err := CheckCorrespondence(c.Plan, out.Steps, out.Outcome); err != nil {
		t.Errorf("trace: %v", err)
	}
	return out, after.TotalAlloc - before.TotalAlloc
}

// memCeiling is what one of these runs may allocate in all: a few times
// the per-run and per-evaluation byte budgets.
const memCeiling = 64 << 20

// TestIssue14ByteBombs runs the two programs of issue 14 as they were
// filed (a string doubling in a loop; a large repeat stored on every
// iteration) and single-expression
// growth through every builtin that builds strings or lists: each must end
// limit_exceeded quickly, having allocated a bounded amount, with a message
// naming the limit and the step.
func TestIssue14ByteBombs(t *testing.T) {
	prog := func(steps string) string {
		return `{"name":"bomb","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":` + steps + `}`
	}
	set := func(expr string) string {
		return prog(`[{"id":"a","set":{"s":"{{ repeat('x', 600000) }}","l":"{{ 1..500 }}"}},{"id":"b","set":{"v":"{{ ` + expr + ` }}"}}]`)
	}
	tests := []struct {
		name, src, step, limit string
	}{
		{"issue: doubling in a loop", `{"name":"dbl","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"a","set":{"v":"x"}},{"id":"r","repeat":{"count":40},"do":[{"id":"d","set":{"v":"{{ vars.v + vars.v }}"}}]}]}`, "d#20", "MaxValueBytes"},
		{"issue: 200 large repeats", prog(`[{"id":"r","repeat":{"count":200},"do":[{"id":"d","set":{"v":"{{ repeat('x', 400000) }}"}}]}]`), "d#", "MaxRunBytes"},
		{"repeat of a billion", set(`repeat('x', 1000000000)`), `"b"`, "MaxValueBytes"},
		{"repeat of a large string", set(`repeat(vars.s, 1000000)`), `"b"`, "MaxValueBytes"},
		{"concatenation chain", set(`vars.s + vars.s + vars.s + vars.s + vars.s + vars.s`), `"b"`, "MaxValueBytes"},
		{"many values under the cap", set(`map(1..200, repeat('y', 900000))`), `"b"`, "MaxEvalBytes"},
		{"join", set(`join(map(1..100, vars.s), ',')`), `"b"`, "MaxValueBytes"},
		{"replace", set(`replace(vars.s, 'x', 'yyyy')`), `"b"`, "MaxValueBytes"},
		{"replace empty", set(`replace(vars.s, '', 'ab')`), `"b"`, "MaxValueBytes"},
		{"toJSON inside upper", set(`upper(toJSON(map(1..2, vars.s)))`), `"b"`, "MaxValueBytes"},
		{"toJSON of references", set(`toJSON(map(1..100, vars.s))`), `"b"`, "MaxValueBytes"},
		{"string of references", set(`string(map(1..100, vars.s))`), `"b"`, "MaxValueBytes"},
		{"concat doubling", set(`let a = concat(vars.l, vars.l); let b = concat(a, a); let c = concat(b, b); let d = concat(c, c); let e = concat(d, d); let f = concat(e, e); let g = concat(f, f); let h = concat(g, g); let i = concat(h, h); let j = concat(i, i); let k = concat(j, j); let m = concat(k, k); let n = concat(m, m); let o = concat(n, n); let p = concat(o, o); let q = concat(p, p); let r = concat(q, q); let s = concat(r, r); len(s)`), `"b"`, "Max"},
		{"nested literals flattened", set(`let a = [vars.l, vars.l]; let b = [a, a]; let c = [b, b]; let d = [c, c]; let e = [d, d]; let f = [e, e]; let g = [f, f]; let h = [g, g]; let i = [h, h]; let j = [i, i]; let k = [j, j]; let m = [k, k]; let n = [m, m]; let o = [n, n]; let p = [o, o]; let q = [p, p]; len(flatten(q))`), `"b"`, "Max"},
		{"split into characters", set(`split(vars.s, '')`), `"b"`, "MaxValueBytes"},
		{"result of references", set(`map(1..100, vars.s)`), `"b"`, "MaxValueBytes"},
		{"template text", prog(`[{"id":"a","set":{"s":"{{ repeat('x', 600000) }}"}},{"id":"b","set":{"v":"{{ vars.s }}-{{ vars.s }}"}}]`), `"b"`, "MaxValueBytes"},
		{"call arguments", prog(`[{"id":"a","set":{"s":"{{ repeat('x', 1000000) }}"}},{"id":"r","repeat":{"count":50},"do":[{"id":"n","call":"notify.phone","args":{"message":"{{ vars.s }}"}}]}]`), `"n#`, "MaxRunBytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			res, alloc := memRun(t, tt.src, DefaultLimits)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			if res.Outcome.Status != StatusLimitExceeded {
				t.Fatalf("outcome %+v, want limit_exceeded", res.Outcome)
			}
			if msg := res.Outcome.Error; !strings.Contains(msg, tt.step) || !strings.Contains(msg, tt.limit) {
				t.Errorf("message %q does not name step %s and limit %s", msg, tt.step, tt.limit)
			}
			t.Logf("%s (allocated %d kB)", res.Outcome.Error, alloc>>10)
			if alloc > memCeiling {
				t.Errorf("allocated %d MB, ceiling %d MB", alloc>>20, memCeiling>>20)
			}
			if len(res.Steps) == 0 || res.Steps[len(res.Steps)-1].Outcome.Status != StepLimitExceeded {
				t.Errorf("partial trace does not end with the step that went past the limit: %v", itIDs(res.Steps))
			}
		})
	}
}

// genByteProgram makes a random program of loops and growing values: string
// doubling and concatenation, repeat, join, replace, split, toJSON, list
// literals, concat and flatten, interpolated text and call arguments, with
// sizes from one byte to a billion.
func genByteProgram(rnd *rand.Rand) string {
	sizes := []string{"1", "10", "1000", "100000", "1000000", "1000000000"}
	k := func() string { return sizes[rnd.Intn(len(sizes))] }
	strExprs := []func() string{
		func() string { return "vars.v + vars.v" },
		func() string { return "vars.v + 'y' + vars.v" },
		func() string { return "repeat(vars.v, " + k() + ")" },
		func() string { return "repeat('x', " + k() + ")" },
		func() string { return "join([vars.v, vars.v, vars.v], '-')" },
		func() string { return "join(map(1.." + k() + ", vars.v), ',')" },
		func() string { return "toJSON([vars.v, vars.l, {a: vars.v}])" },
		func() string { return "upper(vars.v)" },
		func() string { return "replace(vars.v, 'x', 'xxx')" },
		func() string { return "string(map(1..50, vars.l))" },
		func() string { return "vars.v + string(len(split(vars.v, '')))" },
		func() string { return "repeat('\\u0001<\\\"', " + k() + ")" },
		func() string { return "string(len(groupBy(1.." + k() + ", #)))" },
		func() string { return "string(sum(vars.l, sum(1.." + k() + ", sum(vars.l, #))))" },
		func() string { return "string(len(sortBy(map(1.." + k() + ", vars.v), len(#))))" },
	}
	listExprs := []func() string{
		func() string { return "concat(vars.l, vars.l)" },
		func() string { return "[vars.l, vars.l, vars.v]" },
		func() string { return "flatten([vars.l, [vars.l]])" },
		func() string { return "map(1.." + k() + ", vars.v)" },
		func() string { return "fromJSON(toJSON(vars.l))" },
	}
	n := 0
	id := func() string { n++; return "s" + strconv.Itoa(n) }
	leaf := func() string {
		switch rnd.Intn(5) {
		case 0:
			return `{"id":"` + id() + `","set":{"l":"{{ ` + listExprs[rnd.Intn(len(listExprs))]() + ` }}"}}`
		case 1:
			return `{"id":"` + id() + `","set":{"v":"{{ vars.v }}{{ vars.v }}-{{ vars.l }}"}}`
		case 2:
			return `{"id":"` + id() + `","call":"notify.phone","args":{"message":"{{ vars.v }}"}}`
		case 3:
			return `{"id":"` + id() + `","set":{"o":{"a":"{{ vars.v }}","b":["{{ vars.v }}","{{ vars.l }}",{"c":"{{ vars.v }}"}]}}}`
		}
		return `{"id":"` + id() + `","set":{"v":"{{ ` + strExprs[rnd.Intn(len(strExprs))]() + ` }}"}}`
	}
	var body func(depth int) string
	body = func(depth int) string {
		var steps []string
		for range 1 + rnd.Intn(3) {
			if depth < 2 && rnd.Intn(3) == 0 {
				counts := []string{"2", "5", "40", "200", "1000"}
				steps = append(steps, `{"id":"`+id()+`","repeat":{"count":`+counts[rnd.Intn(len(counts))]+`},"do":`+body(depth+1)+`}`)
				continue
			}
			steps = append(steps, leaf())
		}
		return "[" + strings.Join(steps, ",") + "]"
	}
	return `{"name":"fuzz","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[` +
		`{"id":"init","set":{"v":"x","l":"{{ 1..10 }}"}},{"id":"body","if":"true","then":` + body(0) + `}]}`
}

// heapPeak samples the live heap until stop is closed.
func heapPeak(stop <-chan struct{}) <-chan uint64 {
	out := make(chan uint64, 1)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-stop:
				out <- peak
				return
			case <-tk.C:
			}
		}
	}()
	return out
}

// FuzzRunBytes runs random programs with loops, string growth and large
// values: each run must end within its limits (success, limit_exceeded or
// an ordinary failure, never a blow-up), quickly, with the live heap under
// a ceiling far below what the unbounded interpreter reached (gigabytes).
// runawayAfter is how long one fuzzed run may take before it counts as a
// runaway.
const runawayAfter = 60 * time.Second

func FuzzRunBytes(f *testing.F) {
	for seed := range uint64(24) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		src := genByteProgram(rand.New(rand.NewSource(int64(seed))))
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		stop := make(chan struct{})
		peak := heapPeak(stop)
		start := time.Now()
		res, _ := memRun(t, src, DefaultLimits)
		close(stop)
		grew := int64(<-peak) - int64(base.HeapAlloc)
		switch res.Outcome.Status {
		case StatusSuccess, StatusLimitExceeded, StatusFailed:
		default:
			t.Errorf("status %q: %s", res.Outcome.Status, res.Outcome.Error)
		}
		if strings.Contains(res.Outcome.Error, "internal error") {
			t.Errorf("panic: %s", res.Outcome.Error)
		}
		// A run is bounded by its limits, not by wall time: this only
		// catches a runaway.
		if d := time.Since(start); d > runawayAfter {
			t.Errorf("run took %v", d)
		}
		if grew > 192<<20 {
			t.Errorf("live heap grew by %d MB\n%s", grew>>20, src)
		}
		// What the engine stores of the run: its record stays within
		// MaxRunBytes, measured as the JSON it is stored as.
		b, err := json.Marshal(map[string]any{"outcome": res.Outcome, "output": res.Output, "trace": res.Steps, "calls": res.Calls})
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > DefaultLimits.MaxRunBytes+envelopeSlack {
			t.Errorf("the run's record is %d bytes encoded\n%s", len(b), src)
		}
	})
}
