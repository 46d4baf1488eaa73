package recorder

import (
	"encoding/json"

	"github.com/pilothouse/pilothouse/pilotage"
)

// StoredEnvelope is a stored envelope whose values (the output, each
// step's input and output) stay as they were stored, not decoded: decoding
// megabytes of values into maps and encoding them again cost several times
// the record per read.
type StoredEnvelope struct {
	Envelope
	Output json.RawMessage `json:"output,omitempty"`
}

type storedStep struct {
	pilotage.TraceStep
	Input  json.RawMessage `json:"input,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
}

// DecodeStored decodes a stored run's envelope, its values kept raw.
func DecodeStored(b []byte) (*StoredEnvelope, error) {
	var env struct {
		StoredEnvelope
		Trace *struct {
			Level string         `json:"level"`
			Steps []storedStep   `json:"steps"`
			Stats map[string]any `json:"stats,omitempty"`
		} `json:"trace,omitempty"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, err
	}
	out := &env.StoredEnvelope
	if t := env.Trace; t != nil {
		out.Trace = &pilotage.Trace{Level: t.Level, Stats: t.Stats, Steps: make([]pilotage.TraceStep, len(t.Steps))}
		for i, st := range t.Steps {
			out.Trace.Steps[i] = st.TraceStep
			if len(st.Input) > 0 {
				out.Trace.Steps[i].Input = st.Input
			}
			if len(st.Output) > 0 {
				out.Trace.Steps[i].Output = st.Output
			}
		}
	}
	return out, nil
}
