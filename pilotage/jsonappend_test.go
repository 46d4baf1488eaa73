package pilotage

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// checkSame asserts AppendJSON(prefix, v) == prefix + json.Marshal(v), and
// that both fail together with the same message.
func checkSame(t *testing.T, name string, v any) {
	t.Helper()
	want, werr := json.Marshal(v)
	prefix := []byte("prefix:")
	got, gerr := AppendJSON(prefix, v)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%s: error mismatch: Marshal %v, AppendJSON %v", name, werr, gerr)
	}
	if werr != nil {
		if werr.Error() != gerr.Error() {
			t.Errorf("%s: error text: Marshal %q, AppendJSON %q", name, werr, gerr)
		}
		if string(got) != "prefix:" {
			t.Errorf("%s: on error dst = %q, want it unchanged", name, got)
		}
		return
	}
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("%s: prefix lost: %q", name, got)
	}
	if got = got[len(prefix):]; !bytes.Equal(got, want) {
		t.Errorf("%s:\n got %s\nwant %s", name, got, want)
	}
}

// fallbackStruct stands for structs of other packages (rules.CallRecord).
type fallbackStruct struct {
	Step string         `json:"step"`
	Args map[string]any `json:"args,omitempty"`
	At   time.Time      `json:"at"`
}

func f64(f float64) *float64 { return &f }

func TestAppendJSONCases(t *testing.T) {
	at := time.Date(2024, 3, 9, 17, 4, 5, 120000000, time.FixedZone("", 3600))
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	deep := any("leaf")
	for range 500 {
		deep = map[string]any{"d": deep}
	}
	cases := []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"true", true},
		{"false", false},
		{"empty string", ""},
		{"html", `<script>alert("x") && 'y'</script>`},
		{"escapes", "tab\tnl\ncr\rbs\bff\fnul\x00us\x1fdel\x7f back\\slash \"q\""},
		{"line separators", "a\u2028b\u2029c"},
		{"unicode", "héllo wörld – 日本語 🎉"},
		{"invalid utf8", "a\xffb\xc3(c\xed\xa0\x80d\xf0\x9f\x98"},
		{"float 1e21", 1e21},
		{"float just below 1e21", 999999999999999900000.0},
		{"float 1e-7", 1e-7},
		{"float 1e-6", 1e-6},
		{"float 1e-300", 1e-300},
		{"float max", math.MaxFloat64},
		{"float smallest", math.SmallestNonzeroFloat64},
		{"float neg zero", math.Copysign(0, -1)},
		{"float 3.0", 3.0},
		{"float 0.1", 0.1},
		{"float -123.456", -123.456},
		{"float 1e20", 1e20},
		{"float 2^53+1", float64(1<<53 + 1)},
		{"float32 0.1", float32(0.1)},
		{"float32 1e21", float32(1e21)},
		{"float32 1e-7", float32(1e-7)},
		{"float32 max", float32(math.MaxFloat32)},
		{"int max", math.MaxInt64},
		{"int min", math.MinInt64},
		{"int64", int64(-42)},
		{"int32", int32(math.MinInt32)},
		{"uint64 max", uint64(math.MaxUint64)},
		{"uint8", uint8(255)},
		{"number", json.Number("12.5e-3")},
		{"number zero value", json.Number("")},
		{"raw", json.RawMessage(` { "a" : [1, 2, "<&>"] } `)},
		{"raw nil", json.RawMessage(nil)},
		{"time", at},
		{"time utc nanos", time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC)},
		{"time zero", time.Time{}},
		{"time ptr", &at},
		{"time ptr nil", (*time.Time)(nil)},
		{"nil map", map[string]any(nil)},
		{"empty map", map[string]any{}},
		{"nil slice", []any(nil)},
		{"empty slice", []any{}},
		{"nil strings", []string(nil)},
		{"empty strings", []string{}},
		{"nil string map", map[string]string(nil)},
		{"string map", map[string]string{"z": "<", "a": "b", "": "empty key", "é": "x"}},
		{"unsorted nested", map[string]any{
			"zeta": 1, "alpha": map[string]any{"y": []any{3.5, "s", nil, true}, "b": map[string]any{}, "a": nil},
			"Mid": []string{"x", "<y>"}, "a<b": "key escaped", "mid": map[string]string{"k": "v"}, "10": 10, "9": 9,
		}},
		{"fallback values", map[string]any{
			"struct":  fallbackStruct{Step: "s<1>", Args: map[string]any{"b": 1, "a": 2}, At: at},
			"structs": []fallbackStruct{{Step: "x"}},
			"named":   RiskControl,
			"ints":    []int{1, 2, 3},
			"intmap":  map[string]int{"b": 2, "a": 1},
			"ptr":     (*fallbackStruct)(nil),
			"hints":   RiskHints{ReadOnly: true},
			"bytes":   []byte("bytes<>"),
			"dur":     time.Second,
		}},
		{"outcome", Outcome{OK: true, Status: "success"}},
		{"outcome error", Outcome{Status: "failed", Error: "boom <&>"}},
		{"outcome ptr", &Outcome{Status: "x"}},
		{"outcome nil ptr", (*Outcome)(nil)},
		{"decision", Decision{At: "if1", Took: "then", Because: "x > 3"}},
		{"decision zero", Decision{}},
		{"decisions nil", []Decision(nil)},
		{"step zero", TraceStep{}},
		{"step empty collections", TraceStep{Calls: []string{}, Decisions: []Decision{}}},
		{"step typed nil input", TraceStep{Input: map[string]any(nil), Output: []any(nil)}},
		{"step full", TraceStep{ID: "a.b", Calls: []string{"light.set"}, Input: map[string]any{"on": true},
			Output: []any{1, "two"}, Outcome: Outcome{OK: true, Status: "success"}, TMs: f64(0.25),
			Decisions: []Decision{{At: "a", Took: "b", Because: "c"}}}},
		{"step zero t_ms", TraceStep{TMs: f64(0)}},
		{"step ptr", &TraceStep{ID: "x"}},
		{"step nested", TraceStep{ID: "a#2", Parent: "loop"}},
		{"steps nil", []TraceStep(nil)},
		{"steps empty", []TraceStep{}},
		{"trace zero", Trace{}},
		{"trace nil ptr", (*Trace)(nil)},
		{"trace", &Trace{Level: LevelFull, Steps: []TraceStep{{ID: "t"}}, Stats: map[string]any{"steps": 1, "ms": 0.5}}},
		{"trace empty stats", Trace{Level: LevelSummary, Steps: []TraceStep{}, Stats: map[string]any{}}},
		{"deep", deep},
		// Errors: Marshal's message, dst unchanged.
		{"NaN", math.NaN()},
		{"Inf", math.Inf(1)},
		{"-Inf float32", float32(math.Inf(-1))},
		{"nested NaN", map[string]any{"a": []any{1, math.NaN()}}},
		{"t_ms NaN", TraceStep{TMs: f64(math.NaN())}},
		{"bad number", json.Number("1.")},
		{"bad raw", json.RawMessage(`{`)},
		{"bad time", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"cycle", cyclic},
	}
	for _, c := range cases {
		checkSame(t, c.name, c.v)
	}
}

// randGen builds random values of the shapes a run envelope holds, plus
// some that AppendJSON hands to json.Marshal.
type randGen struct{ r *rand.Rand }

var randStringParts = []string{"a", "Z", "0", " ", "<", ">", "&", `"`, `\`, "/", "\n", "\t", "\x00", "\x1f", "\x7f",
	"é", "日本", "🎉", "\u2028", "\u2029", "\xff", "\xc3", "\xed\xa0\x80", "\ufffd", "key", "value"}

func (g randGen) string() string {
	var sb strings.Builder
	for range g.r.Intn(8) {
		sb.WriteString(randStringParts[g.r.Intn(len(randStringParts))])
	}
	return sb.String()
}

func (g randGen) float() float64 {
	switch g.r.Intn(6) {
	case 0:
		return []float64{0, math.Copysign(0, -1), 1e21, 1e-6, 1e-7, 1e20, 999999999999999900000, 0.1, 3, -1}[g.r.Intn(10)]
	case 1:
		for {
			if f := math.Float64frombits(g.r.Uint64()); !math.IsNaN(f) && !math.IsInf(f, 0) {
				return f
			}
		}
	case 2:
		return math.Round(g.r.NormFloat64() * 1000)
	default:
		return g.r.NormFloat64() * math.Pow(10, float64(g.r.Intn(60)-30))
	}
}

func (g randGen) float32() float32 {
	if g.r.Intn(2) == 0 {
		for {
			if f := math.Float32frombits(g.r.Uint32()); !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0) {
				return f
			}
		}
	}
	return float32(g.r.NormFloat64() * math.Pow(10, float64(g.r.Intn(60)-30)))
}

func (g randGen) time() time.Time {
	zones := []*time.Location{time.UTC, time.FixedZone("", -5*3600), time.FixedZone("X", 5*3600+1800)}
	return time.Unix(g.r.Int63n(4e9), g.r.Int63n(1e9)).In(zones[g.r.Intn(len(zones))])
}

func (g randGen) strings() []string {
	if g.r.Intn(5) == 0 {
		return nil
	}
	s := make([]string, g.r.Intn(4))
	for i := range s {
		s[i] = g.string()
	}
	return s
}

func (g randGen) value(depth int) any {
	n := 22
	if depth > 3 {
		n = 12 // scalars only
	}
	switch g.r.Intn(n) {
	case 0:
		return nil
	case 1:
		return g.r.Intn(2) == 0
	case 2, 3:
		return g.string()
	case 4:
		return g.float()
	case 5:
		return g.float32()
	case 6:
		return int(g.r.Uint64())
	case 7:
		return []any{int64(g.r.Uint64()), int32(g.r.Uint32()), g.r.Uint64(), uint(g.r.Uint32())}[g.r.Intn(4)]
	case 8:
		return json.Number([]string{"0", "-1", "12.5", "1e9", "-0.5E-3", ""}[g.r.Intn(6)])
	case 9:
		return g.time()
	case 10:
		return RiskSecurity // a named string: fallback
	case 11:
		return []any{fallbackStruct{Step: g.string(), At: g.time()}, []int{g.r.Intn(9)}, json.RawMessage(` [ "<", 1 ] `)}[g.r.Intn(3)]
	case 12, 13, 14:
		if g.r.Intn(8) == 0 {
			return map[string]any(nil)
		}
		m := map[string]any{}
		for range g.r.Intn(6) {
			m[g.string()] = g.value(depth + 1)
		}
		return m
	case 15, 16:
		if g.r.Intn(8) == 0 {
			return []any(nil)
		}
		s := make([]any, g.r.Intn(5))
		for i := range s {
			s[i] = g.value(depth + 1)
		}
		return s
	case 17:
		return g.strings()
	case 18:
		if g.r.Intn(5) == 0 {
			return map[string]string(nil)
		}
		m := map[string]string{}
		for range g.r.Intn(5) {
			m[g.string()] = g.string()
		}
		return m
	case 19:
		return g.step(depth + 1)
	case 20:
		return g.trace(depth + 1)
	default:
		return fallbackStruct{Step: g.string(), Args: map[string]any{g.string(): g.float()}, At: g.time()}
	}
}

func (g randGen) outcome() Outcome {
	o := Outcome{OK: g.r.Intn(2) == 0, Status: g.string()}
	if g.r.Intn(2) == 0 {
		o.Error = g.string()
	}
	return o
}

func (g randGen) step(depth int) TraceStep {
	s := TraceStep{ID: g.string(), Calls: g.strings(), Outcome: g.outcome()}
	if g.r.Intn(2) == 0 {
		s.Input = g.value(depth + 1)
	}
	if g.r.Intn(2) == 0 {
		s.Output = g.value(depth + 1)
	}
	if g.r.Intn(2) == 0 {
		s.TMs = f64(g.float())
	}
	switch g.r.Intn(3) {
	case 0:
		s.Decisions = []Decision{}
	case 1:
		for range 1 + g.r.Intn(3) {
			s.Decisions = append(s.Decisions, Decision{At: g.string(), Took: g.string(), Because: g.string()})
		}
	}
	return s
}

func (g randGen) trace(depth int) *Trace {
	tr := &Trace{Level: []string{LevelNone, LevelSummary, LevelFull, g.string()}[g.r.Intn(4)]}
	if g.r.Intn(6) != 0 {
		tr.Steps = []TraceStep{}
		for range g.r.Intn(5) {
			tr.Steps = append(tr.Steps, g.step(depth+1))
		}
	}
	if g.r.Intn(2) == 0 {
		if m, ok := g.value(depth + 1).(map[string]any); ok {
			tr.Stats = m
		}
	}
	return tr
}

func TestAppendJSONRandom(t *testing.T) {
	g := randGen{rand.New(rand.NewSource(20240309))}
	for i := range 5000 {
		var v any
		switch i % 4 {
		case 0:
			v = g.value(0)
		case 1:
			v = g.step(0)
		case 2:
			v = g.trace(0)
		default:
			v = map[string]any{"outcome": g.outcome(), "output": g.value(0), "trace": g.trace(0)}
		}
		checkSame(t, "random value", v)
		if t.Failed() {
			t.Fatalf("value #%d: %#v", i, v)
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	g := randGen{rand.New(rand.NewSource(7))}
	for range 2000 {
		s := g.string()
		want, _ := json.Marshal(s)
		if got := AppendJSONString([]byte("x"), s); !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("AppendJSONString(%q) = %s, want %s", s, got[1:], want)
		}
	}
}

// TestAppendJSONStructTags guards the hand-written struct encoders: a field
// added to or retagged in these types must be handled in jsonappend.go
// before this passes again.
func TestAppendJSONStructTags(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{Outcome{}, "OK:ok Status:status Error:error,omitempty"},
		{Decision{}, "At:at Took:took Because:because"},
		{TraceStep{}, "ID:id Parent:parent,omitempty Calls:calls,omitempty Input:input,omitempty Output:output,omitempty Outcome:outcome TMs:t_ms,omitempty Decisions:decisions,omitempty"},
		{Trace{}, "Level:level Steps:steps Stats:stats,omitempty"},
	} {
		if got := testutil.JSONTags(c.v); got != c.want {
			t.Errorf("%T fields changed: %s\nAppendJSON's encoder handles: %s", c.v, got, c.want)
		}
	}
}
