package engine

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
)

// TestReadableRoundsCopies: readable rounds a wait's waited_ms (live or
// stored), t_ms and elapsed_ms, leaves other outputs alone, and never
// changes the trace it is given (a live run's trace is the recorder's
// too).
func TestReadableRoundsCopies(t *testing.T) {
	tms := 120.286324
	in := &pilotage.Trace{Level: pilotage.LevelFull, Stats: map[string]any{"elapsed_ms": 250.645118, "steps": 3},
		Steps: []pilotage.TraceStep{
			{ID: "live", Output: map[string]any{"met": false, "waited_ms": 12047.573393}, TMs: &tms},
			{ID: "stored", Output: json.RawMessage(`{"met":true,"waited_ms":130.5}`)},
			{ID: "set", Output: map[string]any{"waited_ms": 1.25}}, // a variable, not a wait
			{ID: "call", Output: map[string]any{"published": true}},
		}}
	before, _ := json.Marshal(in)
	out := readable(in)
	after, _ := json.Marshal(in)
	if string(before) != string(after) {
		t.Fatalf("readable changed its input:\n%s\n%s", before, after)
	}
	for _, tc := range []struct {
		name string
		got  any
		want any
	}{
		{"a live wait", out.Steps[0].Output, map[string]any{"met": false, "waited_ms": 12048.0}},
		{"t_ms", *out.Steps[0].TMs, 120.286},
		{"a stored wait", out.Steps[1].Output, map[string]any{"met": true, "waited_ms": 131.0}},
		{"another output", out.Steps[2].Output, map[string]any{"waited_ms": 1.25}},
		{"a call", out.Steps[3].Output, map[string]any{"published": true}},
		{"elapsed_ms", out.Stats["elapsed_ms"], 251.0},
		{"other stats", out.Stats["steps"], 3},
	} {
		if !reflect.DeepEqual(tc.got, tc.want) {
			t.Errorf("%s: %#v, want %#v", tc.name, tc.got, tc.want)
		}
	}
}
