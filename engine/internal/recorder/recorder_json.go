package recorder

import (
	"slices"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// appendEnvelope appends env encoded byte for byte as json.Marshal(env)
// would (envelope's field order, tags and omitempty), without encoding/json's
// reflection over the maps a firing's output and trace are made of.
func appendEnvelope(b []byte, env *Envelope) ([]byte, error) {
	var err error
	b = append(b, `{"run_id":`...)
	b = pilotage.AppendJSONString(b, env.RunID)
	b = append(b, `,"outcome":`...)
	if b, err = pilotage.AppendJSON(b, &env.Outcome); err != nil {
		return b, err
	}
	if env.Output != nil {
		b = append(b, `,"output":`...)
		if b, err = appendOutput(b, env.Output); err != nil {
			return b, err
		}
	}
	if env.Trace != nil {
		b = append(b, `,"trace":`...)
		if b, err = pilotage.AppendJSON(b, env.Trace); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendOutput is pilotage.AppendJSON, except that call records (a
// firing's output is {"calls": []rules.CallRecord, "vars": …}), which
// pilotage cannot name, are encoded here rather than by json.Marshal.
func appendOutput(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case *firingOutput:
		b = append(b, `{"calls":`...)
		b, err := appendCalls(b, x.calls)
		if err != nil {
			return b, err
		}
		b = append(b, `,"vars":`...)
		if x.vars == nil {
			b = append(b, "{}"...)
		} else if b, err = pilotage.AppendJSON(b, x.vars); err != nil {
			return b, err
		}
		return append(b, '}'), nil
	case []rules.CallRecord:
		return appendCalls(b, x)
	case map[string]any:
		if x == nil {
			break
		}
		var buf [8]string
		keys := buf[:0]
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys) // encoding/json's key order
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = pilotage.AppendJSONString(b, k)
			b = append(b, ':')
			var err error
			if calls, ok := x[k].([]rules.CallRecord); ok {
				b, err = appendCalls(b, calls)
			} else {
				b, err = pilotage.AppendJSON(b, x[k])
			}
			if err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	}
	return pilotage.AppendJSON(b, v)
}

// appendCalls encodes call records as json.Marshal does (rules.CallRecord's
// tags; TestEnvelopeEncodingTags fails when they change).
func appendCalls(b []byte, cs []rules.CallRecord) ([]byte, error) {
	if cs == nil {
		return append(b, "null"...), nil
	}
	var err error
	b = append(b, '[')
	for i := range cs {
		c := &cs[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"step":`...)
		b = pilotage.AppendJSONString(b, c.Step)
		b = append(b, `,"id":`...)
		b = pilotage.AppendJSONString(b, c.ID)
		if len(c.Args) > 0 {
			b = append(b, `,"args":`...)
			if b, err = pilotage.AppendJSON(b, c.Args); err != nil {
				return b, err
			}
		}
		if c.Output != nil {
			b = append(b, `,"output":`...)
			if b, err = pilotage.AppendJSON(b, c.Output); err != nil {
				return b, err
			}
		}
		if c.Error != "" {
			b = append(b, `,"error":`...)
			b = pilotage.AppendJSONString(b, c.Error)
		}
		b = append(b, `,"at":`...)
		if b, err = pilotage.AppendJSON(b, &c.At); err != nil {
			return b, err
		}
		b = append(b, '}')
	}
	return append(b, ']'), nil
}
