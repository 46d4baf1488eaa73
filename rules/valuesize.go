package rules

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

// maxMeasureDepth is how deep a value may nest before it counts as too
// large (a measured value is walked recursively; a set step stores at most
// MaxValueDepth levels).
const maxMeasureDepth = 2 * MaxValueDepth

// valueSize is a value's measured size: the length of its compact JSON
// encoding, estimated (strings count their bytes without escapes, numbers
// a typical width), and whether the walk stopped because the value nests
// deeper than maxMeasureDepth.
type valueSize struct {
	n    int
	deep bool
}

// over reports whether the value does not fit in limit bytes.
func (s valueSize) over(limit int) bool { return s.deep || s.n > limit }

// measure walks v until its size passes limit, so a value made of many
// references to one large string or list costs at most about limit steps to
// measure, however large it would be once encoded. indent adds what
// json.MarshalIndent with a two-space indent writes around each member.
func measure(v any, limit int, indent bool) valueSize {
	m := sizer{limit: limit, indent: indent}
	m.add(v, 0)
	return valueSize{m.n, m.deep}
}

type sizer struct {
	n, limit int
	deep     bool
	indent   bool
}

func (m *sizer) done() bool { return m.deep || m.n > m.limit }

// member counts what separates and indents one member at depth.
func (m *sizer) member(depth int) {
	m.n++
	if m.indent {
		m.n += 1 + 2*(depth+1)
	}
}

func (m *sizer) add(v any, depth int) {
	if m.done() {
		return
	}
	if depth > maxMeasureDepth {
		m.deep = true
		return
	}
	switch x := v.(type) {
	case nil:
		m.n += 4
	case bool:
		m.n += 5
	case string:
		m.n += len(x) + 2
	case int, int64, int32, uint, uint64, uint32, float64, float32:
		m.n += 8
	case json.Number:
		m.n += len(x)
	case time.Time:
		m.n += 27
	case time.Duration:
		m.n += 12
	case map[string]any:
		m.n += 2
		for k, e := range x {
			m.member(depth)
			m.n += len(k) + 3
			if m.add(e, depth+1); m.done() {
				return
			}
		}
	case []any:
		m.n += 2
		for _, e := range x {
			m.member(depth)
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
			m.member(depth)
			if m.add(rv.Index(i).Interface(), depth+1); m.done() {
				return
			}
		}
	case reflect.Map:
		m.n += 2
		it := rv.MapRange()
		for it.Next() {
			m.member(depth)
			m.n += len(fmt.Sprint(it.Key().Interface())) + 3
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
		m.n += rv.Len() + 2
	default:
		m.n += 8
	}
}
