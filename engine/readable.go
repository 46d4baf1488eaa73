package engine

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"

	"github.com/pilothouse/pilothouse/pilotage"
)

// readable is trace t as a person reads it (over MCP, in the web UI, and
// in the CLI, which prints what the server answers): the durations the
// run measured in nanoseconds rounded, a wait step's waited_ms and the
// run's elapsed_ms to whole milliseconds (12047.573393 → 12048), each
// step's t_ms to the microsecond. t is left as it is (a live run's trace
// is the recorder's too): what changes is copied.
func readable(t *pilotage.Trace) *pilotage.Trace {
	if t == nil {
		return nil
	}
	out := *t
	out.Steps = make([]pilotage.TraceStep, len(t.Steps))
	copy(out.Steps, t.Steps)
	tms := make([]float64, len(t.Steps)) // one allocation for every t_ms
	for i := range out.Steps {
		s := &out.Steps[i]
		if s.TMs != nil {
			tms[i] = math.Round(*s.TMs*1000) / 1000
			s.TMs = &tms[i]
		}
		s.Output = waitRounded(s.Output)
	}
	if v, ok := t.Stats["elapsed_ms"].(float64); ok && v != math.Round(v) {
		out.Stats = maps.Clone(t.Stats)
		out.Stats["elapsed_ms"] = math.Round(v)
	}
	return &out
}

// waitRounded is a wait step's output ({"met": …, "waited_ms": …}) with
// waited_ms in whole milliseconds; any other value as it is. Stored
// outputs are raw JSON: only one naming waited_ms is decoded.
func waitRounded(v any) any {
	var m map[string]any
	switch x := v.(type) {
	case map[string]any:
		m = x
	case json.RawMessage:
		if !bytes.Contains(x, []byte(`"waited_ms"`)) || json.Unmarshal(x, &m) != nil {
			return v
		}
	default:
		return v
	}
	ms, isNum := m["waited_ms"].(float64)
	if _, isWait := m["met"].(bool); !isWait || !isNum || ms == math.Round(ms) {
		return v
	}
	m = maps.Clone(m)
	m["waited_ms"] = math.Round(ms)
	return m
}
