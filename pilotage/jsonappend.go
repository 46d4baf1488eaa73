package pilotage

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends the JSON encoding of v to dst: exactly the bytes
// encoding/json.Marshal(v) produces (sorted map keys, HTML-safe string
// escaping, invalid UTF-8 replaced by U+FFFD, encoding/json's float
// format), without reflection for the values a run's envelope is made of:
// nil, bools, strings, numbers, json.Number, time.Time, map[string]any,
// []any, []string, map[string]string and the trace records of this package
// (Outcome, Decision, TraceStep, Trace, their slices and pointers). Any
// other value, at any depth, is encoded by json.Marshal and its result
// appended, so the output never differs from Marshal's.
//
// On error (a NaN or infinite float, an invalid json.Number, whatever
// Marshal rejects) it returns dst unchanged in length and the error
// json.Marshal reports for the offending value.
func AppendJSON(dst []byte, v any) ([]byte, error) {
	n := len(dst)
	b, err := appendAny(dst, v, 0)
	if err != nil {
		return dst[:n], err
	}
	return b, nil
}

// AppendJSONString appends s as a JSON string, as json.Marshal(s) does.
// It spares callers the allocation of boxing a string into an interface.
func AppendJSONString(dst []byte, s string) []byte {
	return appendString(dst, s)
}

// maxFastDepth bounds the recursion of the fast path. Deeper values are
// handed to json.Marshal, which detects cycles (a map holding itself) and
// reports them as errors instead of overflowing the stack.
const maxFastDepth = 200

// fallback appends json.Marshal(v).
func fallback(b []byte, v any) ([]byte, error) {
	m, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	return append(b, m...), nil
}

// appendAny dispatches by kind family: the values JSON itself is made of
// first (the common case), then Go's other numbers, then the library and
// trace records; anything else goes to json.Marshal.
func appendAny(b []byte, v any, depth int) ([]byte, error) {
	if depth > maxFastDepth {
		return fallback(b, v)
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case string:
		return appendString(b, x), nil
	case float64:
		return appendFloat(b, x, 64)
	case map[string]any:
		return appendMapAny(b, x, depth)
	case []any:
		return appendSliceAny(b, x, depth)
	}
	if out, ok := appendInteger(b, v); ok {
		return out, nil
	}
	if out, ok, err := appendLibrary(b, v); ok {
		return out, err
	}
	if out, ok, err := appendRecord(b, v, depth); ok {
		return out, err
	}
	return fallback(b, v)
}

// appendInteger appends Go's integer kinds; ok is false for anything else.
func appendInteger(b []byte, v any) ([]byte, bool) {
	switch x := v.(type) {
	case int:
		return strconv.AppendInt(b, int64(x), 10), true
	case int64:
		return strconv.AppendInt(b, x, 10), true
	case int32:
		return strconv.AppendInt(b, int64(x), 10), true
	case int16:
		return strconv.AppendInt(b, int64(x), 10), true
	case int8:
		return strconv.AppendInt(b, int64(x), 10), true
	case uint:
		return strconv.AppendUint(b, uint64(x), 10), true
	case uint64:
		return strconv.AppendUint(b, x, 10), true
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), true
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10), true
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10), true
	}
	return b, false
}

// appendLibrary appends float32, encoding/json's and time's types and the
// string slices and maps; ok is false for anything else.
func appendLibrary(b []byte, v any) ([]byte, bool, error) {
	switch x := v.(type) {
	case float32:
		out, err := appendFloat(b, float64(x), 32)
		return out, true, err
	case json.Number:
		s := string(x)
		if s == "" {
			s = "0" // as encoding/json: the zero Number encodes as 0
		}
		if !isValidNumber(s) {
			out, err := fallback(b, v) // Marshal's error
			return out, true, err
		}
		return append(b, s...), true, nil
	case json.RawMessage:
		if x == nil {
			return append(b, "null"...), true, nil
		}
		out, err := fallback(b, v) // Marshal compacts and HTML-escapes it
		return out, true, err
	case time.Time:
		out, err := appendTime(b, x)
		return out, true, err
	case *time.Time:
		if x == nil {
			return append(b, "null"...), true, nil
		}
		out, err := appendTime(b, *x)
		return out, true, err
	case []string:
		return appendStrings(b, x), true, nil
	case map[string]string:
		return appendMapString(b, x), true, nil
	}
	return b, false, nil
}

// appendRecord appends this package's trace records, their slices and
// pointers; ok is false for anything else.
func appendRecord(b []byte, v any, depth int) ([]byte, bool, error) {
	var err error
	switch x := v.(type) {
	case Outcome:
		b = appendOutcome(b, &x)
	case *Outcome:
		if x == nil {
			return append(b, "null"...), true, nil
		}
		b = appendOutcome(b, x)
	case Decision:
		b = appendDecision(b, &x)
	case *Decision:
		if x == nil {
			return append(b, "null"...), true, nil
		}
		b = appendDecision(b, x)
	case []Decision:
		b = appendDecisions(b, x)
	case TraceStep:
		b, err = appendStep(b, &x, depth)
	case *TraceStep:
		if x == nil {
			return append(b, "null"...), true, nil
		}
		b, err = appendStep(b, x, depth)
	case []TraceStep:
		b, err = appendSteps(b, x, depth)
	case Trace:
		b, err = appendTrace(b, &x, depth)
	case *Trace:
		if x == nil {
			return append(b, "null"...), true, nil
		}
		b, err = appendTrace(b, x, depth)
	default:
		return b, false, nil
	}
	return b, true, err
}

func appendSliceAny(b []byte, s []any, depth int) ([]byte, error) {
	if s == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, e := range s {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendAny(b, e, depth+1); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

// sortedKeys returns m's keys in encoding/json's order (byte-wise), in buf
// when they fit.
func sortedKeys[V any](buf []string, m map[string]V) []string {
	keys := buf[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func appendMapAny(b []byte, m map[string]any, depth int) ([]byte, error) {
	if m == nil {
		return append(b, "null"...), nil
	}
	var buf [16]string
	b = append(b, '{')
	for i, k := range sortedKeys(buf[:], m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		var err error
		if b, err = appendAny(b, m[k], depth+1); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

func appendMapString(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	var buf [16]string
	b = append(b, '{')
	for i, k := range sortedKeys(buf[:], m) {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = appendString(b, m[k])
	}
	return append(b, '}')
}

func appendStrings(b []byte, s []string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, e := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, e)
	}
	return append(b, ']')
}

// appendTime appends t as time.Time.MarshalJSON does: RFC 3339 with
// sub-second precision, quoted (AppendText writes the same text without
// the quotes or an allocation).
func appendTime(b []byte, t time.Time) ([]byte, error) {
	out, err := t.AppendText(append(b, '"'))
	if err != nil {
		return fallback(b, t) // Marshal's error (AppendText returned nil)
	}
	return append(out, '"'), nil
}

func appendOutcome(b []byte, o *Outcome) []byte {
	b = append(b, `{"ok":`...)
	b = strconv.AppendBool(b, o.OK)
	b = append(b, `,"status":`...)
	b = appendString(b, o.Status)
	if o.Error != "" {
		b = append(b, `,"error":`...)
		b = appendString(b, o.Error)
	}
	return append(b, '}')
}

func appendDecision(b []byte, d *Decision) []byte {
	b = append(b, `{"at":`...)
	b = appendString(b, d.At)
	b = append(b, `,"took":`...)
	b = appendString(b, d.Took)
	b = append(b, `,"because":`...)
	b = appendString(b, d.Because)
	return append(b, '}')
}

func appendDecisions(b []byte, ds []Decision) []byte {
	if ds == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range ds {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendDecision(b, &ds[i])
	}
	return append(b, ']')
}

func appendStep(b []byte, s *TraceStep, depth int) ([]byte, error) {
	var err error
	b = append(b, `{"id":`...)
	b = appendString(b, s.ID)
	if s.Parent != "" {
		b = append(b, `,"parent":`...)
		b = appendString(b, s.Parent)
	}
	if len(s.Calls) > 0 {
		b = append(b, `,"calls":`...)
		b = appendStrings(b, s.Calls)
	}
	if s.Input != nil {
		b = append(b, `,"input":`...)
		if b, err = appendAny(b, s.Input, depth+1); err != nil {
			return b, err
		}
	}
	if s.Output != nil {
		b = append(b, `,"output":`...)
		if b, err = appendAny(b, s.Output, depth+1); err != nil {
			return b, err
		}
	}
	b = append(b, `,"outcome":`...)
	b = appendOutcome(b, &s.Outcome)
	if s.TMs != nil {
		b = append(b, `,"t_ms":`...)
		if b, err = appendFloat(b, *s.TMs, 64); err != nil {
			return b, err
		}
	}
	if len(s.Decisions) > 0 {
		b = append(b, `,"decisions":`...)
		b = appendDecisions(b, s.Decisions)
	}
	return append(b, '}'), nil
}

func appendSteps(b []byte, ss []TraceStep, depth int) ([]byte, error) {
	if ss == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendStep(b, &ss[i], depth+1); err != nil {
			return b, err
		}
	}
	return append(b, ']'), nil
}

func appendTrace(b []byte, t *Trace, depth int) ([]byte, error) {
	b = append(b, `{"level":`...)
	b = appendString(b, t.Level)
	b = append(b, `,"steps":`...)
	var err error
	if b, err = appendSteps(b, t.Steps, depth+1); err != nil {
		return b, err
	}
	if len(t.Stats) > 0 {
		b = append(b, `,"stats":`...)
		if b, err = appendMapAny(b, t.Stats, depth+1); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendFloat is encoding/json's floatEncoder: ES6 number formatting,
// with 'e' notation below 1e-6 and from 1e21 on, exponents unpadded.
func appendFloat(b []byte, f float64, bits int) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		if bits == 32 {
			return fallback(b, float32(f)) // Marshal's error
		}
		return fallback(b, f)
	}
	abs := math.Abs(f)
	format := byte('f')
	// float32 comparisons for a float32, to get the cutoffs exactly right.
	if abs != 0 {
		if bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
			format = 'e'
		}
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

const hexDigits = "0123456789abcdef"

// htmlSafe marks the ASCII bytes a JSON string carries unescaped with HTML
// escaping on: all but control bytes, '"', '\\', '<', '>' and '&'.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

// appendString is encoding/json's string encoder with HTML escaping on.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				// Other control bytes and <, >, &.
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR break JSONP.
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// isValidNumber reports whether s is a JSON number literal (RFC 7159 §6),
// as encoding/json checks a json.Number before writing it.
func isValidNumber(s string) bool {
	if s == "" {
		return false
	}
	if s[0] == '-' {
		s = s[1:]
		if s == "" {
			return false
		}
	}
	switch {
	default:
		return false
	case s[0] == '0':
		s = s[1:]
	case '1' <= s[0] && s[0] <= '9':
		s = s[1:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	if len(s) >= 2 && s[0] == '.' && '0' <= s[1] && s[1] <= '9' {
		s = s[2:]
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	if len(s) >= 2 && (s[0] == 'e' || s[0] == 'E') {
		s = s[1:]
		if s[0] == '+' || s[0] == '-' {
			s = s[1:]
			if s == "" {
				return false
			}
		}
		for len(s) > 0 && '0' <= s[0] && s[0] <= '9' {
			s = s[1:]
		}
	}
	return s == ""
}
