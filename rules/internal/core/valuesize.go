package core

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"
)

// maxMeasureDepth is how deep a value may nest before it counts as too
// large (a measured value is walked recursively; a set step stores at most
// MaxValueDepth levels).
const MaxMeasureDepth = 2 * MaxValueDepth

// valueSize is a value's measured size: the length of its compact JSON
// encoding as encoding/json writes it (strings with their escapes, HTML
// characters escaped as json.Marshal does, numbers as formatted), and
// whether the walk stopped because the value nests deeper than
// maxMeasureDepth.
type ValueSize struct {
	N    int
	Deep bool
}

// over reports whether the value does not fit in limit bytes.
func (s ValueSize) Over(limit int) bool { return s.Deep || s.N > limit }

// measure walks v until its size passes limit, so a value made of many
// references to one large string or list costs at most about limit steps to
// measure, however large it would be once encoded. indent adds what
// json.MarshalIndent with a two-space indent writes around each member.
func Measure(v any, limit int, indent bool) ValueSize {
	m := sizer{limit: limit, indent: indent}
	m.add(v, 0)
	return ValueSize{m.n, m.deep}
}

type sizer struct {
	n, limit int
	deep     bool
	indent   bool
}

func (m *sizer) done() bool { return m.deep || m.n > m.limit }

// member counts what separates and indents member i at depth.
func (m *sizer) member(i, depth int) {
	if i > 0 {
		m.n++ // the comma
	}
	if m.indent {
		m.n += 1 + 2*(depth+1)
	}
}

func (m *sizer) add(v any, depth int) {
	if m.done() {
		return
	}
	if depth > MaxMeasureDepth {
		m.deep = true
		return
	}
	switch x := v.(type) {
	case nil:
		m.n += 4
	case bool:
		m.n += 5
		if x {
			m.n-- // true
		}
	case string:
		m.n += JsonStringLen(x)
	case int:
		m.n += intLen(int64(x))
	case int64:
		m.n += intLen(x)
	case float64:
		m.n += floatLen(x)
	case int32, uint, uint64, uint32, float32:
		m.n += 24
	case json.Number:
		m.n += len(x)
	case time.Time:
		m.n += len(time.RFC3339Nano) + 2
	case time.Duration:
		m.n += 26 // as jsonSafe writes it: "-2562047h47m16.854775808s"
	case map[string]any:
		m.n += 2
		i := 0
		for k, e := range x {
			m.member(i, depth)
			i++
			m.n += JsonStringLen(k) + 1
			if m.add(e, depth+1); m.done() {
				return
			}
		}
	case []any:
		m.n += 2
		for i, e := range x {
			m.member(i, depth)
			if m.add(e, depth+1); m.done() {
				return
			}
		}
	default:
		m.addReflect(reflect.ValueOf(v), depth)
	}
}

// addReflect measures the other types expressions produce: typed slices
// (split's []string, a range's []int), typed maps, pointers.
func (m *sizer) addReflect(rv reflect.Value, depth int) {
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		m.n += 2
		for i := 0; i < rv.Len(); i++ {
			m.member(i, depth)
			if m.add(rv.Index(i).Interface(), depth+1); m.done() {
				return
			}
		}
	case reflect.Map:
		m.n += 2
		it := rv.MapRange()
		for i := 0; it.Next(); i++ {
			m.member(i, depth)
			m.n += JsonStringLen(fmt.Sprint(it.Key().Interface())) + 1
			if m.add(it.Value().Interface(), depth+1); m.done() {
				return
			}
		}
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			m.n += 4
			return
		}
		m.add(rv.Elem().Interface(), depth+1)
	case reflect.String:
		m.n += JsonStringLen(rv.String())
	default:
		m.n += 24
	}
}

// jsonEscapes is what encoding/json writes for each ASCII byte beyond the
// byte itself: 1 for the two-character escapes, 5 for \u00XX (control
// characters, and <, > and & which json.Marshal escapes for HTML).
var jsonEscapes = func() (t [utf8.RuneSelf]uint8) {
	for b := range 0x20 {
		t[b] = 5
	}
	for _, b := range "\"\\\b\f\n\r\t" {
		t[b] = 1
	}
	for _, b := range "<>&" {
		t[b] = 5
	}
	return t
}()

// jsonStringLen is the length of s encoded as a JSON string by
// json.Marshal, quotes included: a control character takes 6 bytes, so a
// string of them is six times its length once stored. Invalid UTF-8 bytes
// become \ufffd, and U+2028 and U+2029 are escaped.
func JsonStringLen(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			n += int(jsonEscapes[b])
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			n += 5
		case r == '\u2028' || r == '\u2029':
			n += 3
		}
		i += size
	}
	return n
}

// intLen is the number of characters of x in decimal.
func intLen(x int64) int {
	n := 1
	if x < 0 {
		n++
		if x == math.MinInt64 {
			return 20
		}
		x = -x
	}
	for ; x >= 10; x /= 10 {
		n++
	}
	return n
}

// floatLen is the length of x as encoding/json writes it (non-finite
// values become strings, see jsonSafe).
func floatLen(x float64) int {
	switch {
	case x == math.Trunc(x) && math.Abs(x) < 1e15 && (x != 0 || !math.Signbit(x)):
		return intLen(int64(x))
	case math.IsNaN(x) || math.IsInf(x, 0):
		return 6 // "NaN", "+Inf", "-Inf"
	}
	format := byte('f')
	if a := math.Abs(x); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], x, format, -1, 64)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		return n - 1 // e-09 is written e-9
	}
	return len(b)
}
