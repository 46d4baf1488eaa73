package interp

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// exprHalt turns an evaluation error into a short failure naming the step.
// expr errors carry a multi-line source snippet; only the first line is
// kept.
func exprHalt(qid string, err error) *halt {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	status := core.StatusFailed
	var le *model.LimitError
	switch {
	case errors.Is(err, context.Canceled):
		status = core.StatusCancelled
	case errors.Is(err, context.DeadlineExceeded):
		status = core.StatusTimeout
	case errors.As(err, &le) || strings.Contains(msg, "memory budget exceeded"):
		status = core.StatusLimitExceeded
	}
	return &halt{status, fmt.Sprintf("step %q: %s", qid, msg)}
}

// formatReason renders a value inside a decision's because: JSON when it
// can be encoded, otherwise Go's %v.
func FormatReason(v any) string {
	b, err := MarshalCompact(jsonSafe(v))
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// marshalCompact encodes v without HTML escaping (the byte counts and
// previews of truncated outputs are measured on this form).
func MarshalCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// jsonSafe returns v in a form encoding/json always accepts: maps with
// string keys, slices, strings, finite numbers, booleans, nil and
// time.Time. Non-finite floats and values JSON cannot carry (functions,
// channels) become strings, so a trace never fails to encode.
func jsonSafe(v any) any {
	switch x := v.(type) {
	case nil, bool, string, int, int64, int32, uint, uint64, uint32, json.Number, time.Time:
		return v
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return v
	case time.Duration:
		return x.String()
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonSafe(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonSafe(e)
		}
		return out
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		if l, ok := interpList(v); ok {
			return jsonSafe(l)
		}
	case reflect.Map:
		if rv.Type().Key().Kind() == reflect.String {
			out := make(map[string]any, rv.Len())
			it := rv.MapRange()
			for it.Next() {
				out[it.Key().String()] = jsonSafe(it.Value().Interface())
			}
			return out
		}
	case reflect.Float32:
		return jsonSafe(rv.Float())
	case reflect.Func, reflect.Chan, reflect.UnsafePointer:
		return fmt.Sprintf("<%s>", rv.Kind())
	case reflect.Pointer:
		if rv.IsNil() {
			return nil
		}
		return jsonSafe(rv.Elem().Interface())
	}
	if _, err := json.Marshal(v); err != nil {
		return fmt.Sprint(v)
	}
	return v
}

// jsonSafeFresh is jsonSafe for a value made for this step alone (the
// args map of a call, the values of a set step, a World's call output):
// when it is an object whose members are already JSON-safe scalars, the
// copy jsonSafe would make is equal to it, and since nothing changes such
// a value later, the trace can hold it as it is. Anything else (members
// that are objects or lists, which may be the run's live vars or steps)
// is copied as before.
func jsonSafeFresh(v any) any {
	if m, ok := v.(map[string]any); ok && m != nil {
		for _, e := range m {
			if !safeScalar(e) {
				return jsonSafe(v)
			}
		}
		return v
	}
	return jsonSafe(v)
}

// safeScalar reports whether jsonSafe returns v itself and v holds no
// reference (an immutable scalar).
func safeScalar(v any) bool {
	switch x := v.(type) {
	case nil, bool, string, int, int64, int32, uint, uint64, uint32, json.Number, time.Time:
		return true
	case float64:
		return !math.IsNaN(x) && !math.IsInf(x, 0)
	}
	return false
}

// withParamDefaults fills absent top-level params from the "default" of
// each property in the program's params schema. The caller's map is not
// modified.
func WithParamDefaults(schema json.RawMessage, params map[string]any) map[string]any {
	if len(params) == 0 && len(schema) == 0 {
		return nil // made when an expression reads params
	}
	out := make(map[string]any, len(params))
	for k, v := range params {
		out[k] = v
	}
	if len(schema) == 0 {
		return out
	}
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return out
	}
	for k, p := range s.Properties {
		if _, ok := out[k]; ok || len(p.Default) == 0 {
			continue
		}
		var v any
		if json.Unmarshal(p.Default, &v) == nil {
			out[k] = v
		}
	}
	return out
}

// BaseStepID recovers the program step id of a trace entry id (spec
// §5.8.2): the segment after the final "/", without its "#n" suffixes.
func BaseStepID(traceID string) string {
	if i := strings.LastIndexByte(traceID, '/'); i >= 0 {
		traceID = traceID[i+1:]
	}
	if i := strings.IndexByte(traceID, '#'); i >= 0 {
		traceID = traceID[:i]
	}
	return traceID
}
