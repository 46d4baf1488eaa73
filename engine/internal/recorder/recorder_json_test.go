package recorder

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

func ptrF(f float64) *float64 { return &f }

// firingEnvelope is what sched.Rule.record queues for a successful firing of
// a motion-light rule.
func firingEnvelope(id string, calls []rules.CallRecord, vars map[string]any) *Envelope {
	ok := pilotage.Outcome{OK: true, Status: rules.StepSuccess}
	return &Envelope{
		RunID:   id,
		Outcome: pilotage.Outcome{OK: true, Status: rules.StatusSuccess},
		Output:  map[string]any{"calls": calls, "vars": vars},
		Trace: &pilotage.Trace{Level: pilotage.LevelFull, Steps: []pilotage.TraceStep{
			{ID: "triggers", Output: map[string]any{"from": false, "to": true}, Outcome: ok, TMs: ptrF(0.012),
				Decisions: []pilotage.Decision{{At: "triggers", Took: "motion", Because: "hall_motion.occupancy changed"}}},
			{ID: "on_motion.dark", Input: map[string]any{"expr": "lux < 20 && night", "lux": 12.5}, Output: true,
				Outcome: ok, TMs: ptrF(0.034), Decisions: []pilotage.Decision{{At: "on_motion.dark", Took: "then", Because: "12.5 < 20"}}},
			{ID: "on_motion.turn_on", Calls: []string{"hall_light.set"},
				Input:  map[string]any{"state": "ON", "brightness": 180, "transition": 2.5},
				Output: map[string]any{"state": "ON"}, Outcome: ok, TMs: ptrF(1.75)},
		}},
	}
}

func realisticCalls() []rules.CallRecord {
	at := time.Date(2025, 6, 1, 21, 14, 3, 512345678, time.FixedZone("CEST", 2*3600))
	return []rules.CallRecord{
		{Step: "on_motion.turn_on", ID: "hall_light.set", Args: map[string]any{"state": "ON", "brightness": 180, "transition": 2.5},
			Output: map[string]any{"state": "ON", "brightness": 180.0}, At: at},
		{Step: "on_motion.notify", ID: "notify.phone", Args: map[string]any{"message": "Motion <hall> & lights on"},
			Error: "not connected to the MQTT broker", At: at.Add(time.Millisecond).UTC()},
		{Step: "on_motion.lock", ID: "front_lock.set"}, // zero time, no args, no output
		{Step: "s", ID: "x", Args: map[string]any{}, Output: []any{json.Number("1.5"), nil, rules.TriggerFire{ID: "t"}}},
	}
}

func TestEnvelopeEncodingMatchesMarshal(t *testing.T) {
	broken := &Envelope{RunID: "r1", Outcome: pilotage.Outcome{Status: rules.StatusBroken, Error: "unknown entity <x> & \u2028"},
		Trace: &pilotage.Trace{Level: pilotage.LevelFull, Steps: []pilotage.TraceStep{}}}
	skipped := &Envelope{RunID: "r2", Outcome: pilotage.Outcome{OK: true, Status: rules.StatusSkipped, Error: "already running"},
		Trace: &pilotage.Trace{Level: pilotage.LevelFull, Steps: []pilotage.TraceStep{{ID: "triggers",
			Outcome:   pilotage.Outcome{OK: true, Status: rules.StepSuccess},
			Decisions: []pilotage.Decision{{At: "triggers", Took: "motion"}}}}}}
	cases := map[string]*Envelope{
		"firing with calls":    firingEnvelope("run_01J0ZK3X6T9M4Q8R2W5Y7B1C3D", realisticCalls(), map[string]any{"lux": 12.5, "night": true, "who": "hall\xff"}),
		"firing without calls": firingEnvelope("r0", []rules.CallRecord{}, map[string]any{}),
		"nil calls":            firingEnvelope("r0", nil, nil),
		"broken":               broken,
		"skipped":              skipped,
		"no trace":             {RunID: "r3", Outcome: pilotage.Outcome{OK: true, Status: "success"}, Output: map[string]any{"vars": map[string]any{"a": 1}, "stop": "done"}},
		"zero":                 {},
		"output calls slice":   {RunID: "r4", Output: realisticCalls()},
		"output scalar":        {RunID: "r5", Output: 1e21},
		"output typed nil map": {RunID: "r6", Output: map[string]any(nil)},
		"output other type":    {RunID: "r7", Output: map[string]int{"b": 1, "a": 2}},
		"trace with stats": {RunID: "r8", Trace: &pilotage.Trace{Level: pilotage.LevelSummary,
			Stats: map[string]any{"steps": 3, "calls": 1, "ms": 1.796}}},
	}
	for name, env := range cases {
		want, err := json.Marshal(env)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := appendEnvelope([]byte("junk"), env)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got = got[len("junk"):]; !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want)
		}
	}
	// What Marshal rejects is rejected.
	bad := firingEnvelope("r9", []rules.CallRecord{{Step: "s", ID: "x", Args: map[string]any{"v": math.NaN()}}}, nil)
	if _, err := json.Marshal(bad); err == nil {
		t.Fatal("Marshal accepted NaN")
	}
	if _, err := appendEnvelope(nil, bad); err == nil {
		t.Error("appendEnvelope accepted NaN")
	}
}

// A firing's output is a firingOutput, not the map it replaced: it must
// encode to the same bytes, through appendEnvelope and json.Marshal.
func TestFiringOutputEncodesAsItsMap(t *testing.T) {
	for name, c := range map[string]struct {
		calls []rules.CallRecord
		vars  map[string]any
	}{
		"calls and vars": {realisticCalls(), map[string]any{"lux": 12.5, "night": true, "who": "<hall>\xff"}},
		"no vars":        {realisticCalls(), nil},
		"empty vars":     {[]rules.CallRecord{}, map[string]any{}},
		"no calls":       {[]rules.CallRecord{}, nil},
	} {
		old := firingEnvelope("r", c.calls, orEmptyMap(c.vars))
		want, err := json.Marshal(old)
		if err != nil {
			t.Fatal(err)
		}
		env := firingEnvelope("r", nil, nil)
		env.Output = &firingOutput{calls: c.calls, vars: c.vars}
		got, err := appendEnvelope(nil, env)
		if err != nil {
			t.Fatal(err)
		}
		marshalled, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) || !bytes.Equal(marshalled, want) {
			t.Errorf("%s:\n got %s\n marshal %s\nwant %s", name, got, marshalled, want)
		}
	}
}

// TestEnvelopeEncodingRandom compares random call records and variables.
func TestEnvelopeEncodingRandom(t *testing.T) {
	r := rand.New(rand.NewSource(42))
	parts := []string{"a", "<", ">", "&", `"`, "\\", "\n", "\x01", "é", "\u2028", "\xff", "on", "brightness"}
	str := func() string {
		var sb strings.Builder
		for range r.Intn(5) {
			sb.WriteString(parts[r.Intn(len(parts))])
		}
		return sb.String()
	}
	val := func() any {
		switch r.Intn(6) {
		case 0:
			return str()
		case 1:
			return r.NormFloat64() * math.Pow(10, float64(r.Intn(50)-25))
		case 2:
			return r.Intn(1000)
		case 3:
			return r.Intn(2) == 0
		case 4:
			return []any{str(), r.Float64()}
		default:
			return nil
		}
	}
	m := func() map[string]any {
		if r.Intn(4) == 0 {
			return nil
		}
		out := map[string]any{}
		for range r.Intn(5) {
			out[str()] = val()
		}
		return out
	}
	for range 1000 {
		var calls []rules.CallRecord
		for range r.Intn(4) {
			c := rules.CallRecord{Step: str(), ID: str(), Args: m(), Output: val(),
				At: time.Unix(r.Int63n(4e9), r.Int63n(1e9)).In(time.FixedZone("", 3600*(r.Intn(25)-12)))}
			if r.Intn(2) == 0 {
				c.Error = str()
			}
			calls = append(calls, c)
		}
		env := firingEnvelope(str(), calls, m())
		env.Outcome.Error = str()
		want, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendEnvelope(nil, env)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("got %s (%v)\nwant %s", got, err, want)
		}
	}
}

// TestEnvelopeEncodingTags guards the hand-written encoders: a field added
// to or retagged in envelope or rules.CallRecord must be handled in
// appendEnvelope / appendCalls (recorder.go) before this passes again.
func TestEnvelopeEncodingTags(t *testing.T) {
	for _, c := range []struct {
		v    any
		want string
	}{
		{Envelope{}, "RunID:run_id Outcome:outcome Output:output,omitempty Trace:trace,omitempty"},
		{rules.CallRecord{}, "Step:step ID:id Args:args,omitempty Output:output,omitempty Error:error,omitempty At:at"},
	} {
		if got := testutil.JSONTags(c.v); got != c.want {
			t.Errorf("%T fields changed: %s\nthe recorder's encoder handles: %s", c.v, got, c.want)
		}
	}
}

// TestRecorderStoresEncodedEnvelopes runs envelopes through the recorder
// into SQLite: each row keeps its own bytes although the recorder reuses
// one buffer.
func TestRecorderStoresEncodedEnvelopes(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	rec := New(store, quiet(), 100)
	rec.Start()
	defer rec.Close()
	now := time.Now()
	var envs []*Envelope
	for i := range 5 {
		id := storage.NewRunID()
		env := firingEnvelope(id, realisticCalls()[:i%3], map[string]any{"i": i})
		if i == 3 {
			env = &Envelope{RunID: id, Outcome: pilotage.Outcome{Status: rules.StatusBroken, Error: "x"}}
		}
		envs = append(envs, env)
		rec.Add(storage.Run{ID: id, Rule: "r", Kind: "firing", Status: env.Outcome.Status, Started: now, Ended: now,
			Level: pilotage.LevelFull, Expires: now.Add(time.Hour)}, env)
	}
	rec.Flush()
	for _, env := range envs {
		run, err := store.GetRun(ctx, env.RunID)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(env)
		if !bytes.Equal(run.Envelope, want) {
			t.Errorf("run %s stored\n%s\nwant\n%s", env.RunID, run.Envelope, want)
		}
	}
}

func BenchmarkEnvelopeEncode(b *testing.B) {
	env := firingEnvelope("run_01J0ZK3X6T9M4Q8R2W5Y7B1C3D", realisticCalls()[:2], map[string]any{"lux": 12.5, "night": true})
	b.Run("appendEnvelope", func(b *testing.B) {
		b.ReportAllocs()
		var scratch []byte
		for b.Loop() {
			var err error
			if scratch, err = appendEnvelope(scratch[:0], env); err != nil {
				b.Fatal(err)
			}
			row := make([]byte, len(scratch)) // as the recorder: a right-sized copy per row
			copy(row, scratch)
		}
		b.SetBytes(int64(len(scratch)))
	})
	b.Run("Marshal", func(b *testing.B) {
		b.ReportAllocs()
		var out []byte
		for b.Loop() {
			var err error
			if out, err = json.Marshal(env); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(out)))
	})
}

// TestRecorderTrimsAHotRuleAtOnce: a rule that stored hotTrim × keep runs
// is trimmed back to keep per outcome by the next batch (a few hundred
// rows per statement), not tens of thousands of rows every trimEvery.
func TestRecorderTrimsAHotRuleAtOnce(t *testing.T) {
	ctx := context.Background()
	store := openStore(t)
	const keep = 5
	rec := New(store, quiet(), keep)
	rec.Start()
	defer rec.Close()
	now := time.Now()
	add := func(rule string, n int) {
		for range n {
			id := storage.NewRunID()
			rec.Add(storage.Run{ID: id, Rule: rule, Kind: "firing", Status: rules.StatusSuccess, OK: true, Started: now, Ended: now,
				Level: pilotage.LevelFull, Expires: now.Add(time.Hour)}, &Envelope{RunID: id, Outcome: pilotage.Outcome{Status: rules.StatusSuccess, OK: true}})
		}
		rec.Flush()
	}
	count := func(rule string) int {
		l, err := store.ListRuns(ctx, storage.RunFilter{Rule: rule, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(l)
	}
	add("hot", 4*keep-1)
	add("cool", 4*keep-1)
	if n := count("hot"); n != 4*keep-1 {
		t.Fatalf("hot rule has %d runs below the hot threshold, want all %d", n, 4*keep-1)
	}
	add("hot", 1) // reaches hotTrim × keep since the last trim
	if n := count("hot"); n != keep {
		t.Fatalf("hot rule has %d runs after reaching the threshold, want %d (trimmed with that batch)", n, keep)
	}
	if n := count("cool"); n != 4*keep-1 {
		t.Fatalf("a rule below the threshold was trimmed before trimEvery: %d runs", n)
	}
}
