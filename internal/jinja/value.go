package jinja

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Template values follow Python's: None (nil), bool, int, float64, string,
// list ([]any), tuple (jtuple), dict (map[string]any from JSON, *jdict from
// literals: any keys, insertion order) and Jinja's undefined (jUndef).
// Numbers from a payload arrive as json.Number and read as int or float
// by their literal, as Python's json module reads them.

// jUndef is an undefined value: printed as nothing, false, and an error
// when a filter needs a real value.
type jUndef struct{ name string }

// jtuple is an immutable sequence; it never equals a list.
type jtuple []any

// jbound is a method taken without calling it (value_json.items):
// Jinja finds the method before the key.
type jbound struct{ name string }

// jdict is a dict made by a template: any keys, insertion order.
type jdict struct {
	keys, vals []any
}

func (d *jdict) put(k, v any) {
	for i, x := range d.keys {
		if pyEqual(x, k) {
			d.vals[i] = v
			return
		}
	}
	d.keys, d.vals = append(d.keys, k), append(d.vals, v)
}

func (d *jdict) get(k any) (any, bool) {
	for i, x := range d.keys {
		if pyEqual(x, k) {
			return d.vals[i], true
		}
	}
	return nil, false
}

// num reads a number: json.Number as int or float, bool as int; any other
// value is returned as it is.
func num(v any) any {
	switch x := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return int(n)
		}
		f, _ := strconv.ParseFloat(string(x), 64)
		return f
	case bool:
		if x {
			return 1
		}
		return 0
	}
	return v
}

// norm is num for values read out of a payload (a bool stays a bool).
func norm(v any) any {
	if n, ok := v.(json.Number); ok {
		return num(n)
	}
	return v
}

func isNumber(v any) bool {
	switch v.(type) {
	case int, float64:
		return true
	}
	return false
}

func toF(v any) (float64, bool) {
	switch x := num(v).(type) {
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func truthy(v any) bool {
	switch x := v.(type) {
	case nil, jUndef:
		return false
	case bool:
		return x
	case int:
		return x != 0
	case float64:
		return x != 0
	case json.Number:
		f, _ := toF(x)
		return f != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case jtuple:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	case *jdict:
		return len(x.keys) > 0
	}
	return true
}

func pyType(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int:
		return "int"
	case float64:
		return "float"
	case json.Number:
		return pyType(num(v))
	case string:
		return "str"
	case []any:
		return "list"
	case jtuple:
		return "tuple"
	case map[string]any, *jdict:
		return "dict"
	case jUndef:
		return "Undefined"
	case jtime:
		return "datetime"
	}
	return "object"
}

// pyFloat formats a float as Python's repr does.
func pyFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	if a := math.Abs(f); a != 0 && (a < 1e-4 || a >= 1e16) {
		return strconv.FormatFloat(f, 'e', -1, 64)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// pyStr is Python's str().
func pyStr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case jUndef:
		return ""
	case string:
		return x
	case bool:
		if x {
			return "True"
		}
		return "False"
	case int:
		return strconv.Itoa(x)
	case float64:
		return pyFloat(x)
	case json.Number:
		return pyStr(num(x))
	case jbound:
		return "<built-in method " + x.name + ">"
	case *jnamespace:
		return "<Namespace " + pyRepr(x.m) + ">"
	case *jloop:
		return "<LoopContext " + strconv.Itoa(x.i+1) + "/" + strconv.Itoa(x.n) + ">"
	case jtime:
		return x.isoformat(" ")
	}
	return pyRepr(v)
}

// pyRepr is Python's repr().
func pyRepr(v any) string {
	var b strings.Builder
	writeRepr(&b, v, 0)
	return b.String()
}

func writeRepr(b *strings.Builder, v any, depth int) {
	if depth > maxNesting || b.Len() > maxJValue {
		b.WriteString("...")
		return
	}
	switch x := v.(type) {
	case string:
		b.WriteString(pyQuote(x))
	case []any:
		writeSeq(b, "[", "]", x, depth)
	case jtuple:
		if len(x) == 1 {
			b.WriteString("(")
			writeRepr(b, x[0], depth+1)
			b.WriteString(",)")
			return
		}
		writeSeq(b, "(", ")", x, depth)
	case map[string]any:
		keys := sortedKeys(x)
		b.WriteString("{")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pyQuote(k) + ": ")
			writeRepr(b, x[k], depth+1)
		}
		b.WriteString("}")
	case *jdict:
		b.WriteString("{")
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			writeRepr(b, k, depth+1)
			b.WriteString(": ")
			writeRepr(b, x.vals[i], depth+1)
		}
		b.WriteString("}")
	default:
		b.WriteString(pyStr(v))
	}
}

func writeSeq(b *strings.Builder, open, close string, xs []any, depth int) {
	b.WriteString(open)
	for i, it := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		writeRepr(b, it, depth+1)
	}
	b.WriteString(close)
}

// pyQuote quotes a string as Python's repr does.
func pyQuote(s string) string {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(q):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// dictMethods are the methods Jinja finds before a dict's key of that name.
var dictMethods = map[string]bool{"keys": true, "values": true, "items": true, "get": true, "update": true,
	"pop": true, "copy": true, "clear": true, "setdefault": true, "popitem": true, "fromkeys": true}

// getAttr is Jinja's x.name: an attribute (a method), else the item.
func getAttr(v any, name string) (any, error) {
	switch x := v.(type) {
	case jUndef:
		return nil, fmt.Errorf("%s is undefined", undefName(x))
	case map[string]any:
		if dictMethods[name] {
			return jbound{name: name}, nil
		}
		if e, ok := x[name]; ok {
			return norm(e), nil
		}
	case *jdict:
		if dictMethods[name] {
			return jbound{name: name}, nil
		}
		if e, ok := x.get(name); ok {
			return e, nil
		}
	case *jnamespace:
		if e, ok := x.m[name]; ok {
			return e, nil
		}
	case *jloop:
		if e, ok := x.attr(name); ok {
			return e, nil
		}
	case jtime:
		if e, ok := x.attr(name); ok {
			return e, nil
		}
	case string:
		if _, ok := jMethods[name]; ok {
			return jbound{name: name}, nil
		}
	}
	return jUndef{name: pyType(v) + " object has no attribute " + pyQuote(name)}, nil
}

func undefName(u jUndef) string {
	if u.name == "" {
		return "value"
	}
	return pyQuote(u.name)
}

// getItem is Jinja's x[k]: the item, else an attribute named k.
func getItem(v any, k any) (any, error) {
	switch x := v.(type) {
	case jUndef:
		return nil, fmt.Errorf("%s is undefined", undefName(x))
	case map[string]any:
		if ks, ok := k.(string); ok {
			if e, ok := x[ks]; ok {
				return norm(e), nil
			}
		}
	case *jdict:
		if e, ok := x.get(k); ok {
			return e, nil
		}
	case []any:
		return index(x, k, "list")
	case jtuple:
		return index(x, k, "tuple")
	case string:
		if i, ok := num(k).(int); ok {
			rs := []rune(x)
			if i < 0 {
				i += len(rs)
			}
			if i >= 0 && i < len(rs) {
				return string(rs[i]), nil
			}
			return jUndef{name: "string index out of range"}, nil
		}
	}
	if ks, ok := k.(string); ok {
		return getAttr(v, ks)
	}
	return jUndef{name: pyType(v) + " object has no element " + pyRepr(k)}, nil
}

func index(xs []any, k any, typ string) (any, error) {
	i, ok := k.(int)
	if !ok {
		if n, isNum := k.(json.Number); isNum {
			i, ok = num(n).(int)
		}
	}
	if !ok {
		return jUndef{name: typ + " indices must be integers"}, nil
	}
	if i < 0 {
		i += len(xs)
	}
	if i < 0 || i >= len(xs) {
		return jUndef{name: typ + " index out of range"}, nil
	}
	return norm(xs[i]), nil
}

// slice is x[lo:hi:step] of a string, list or tuple.
func slice(s *jstate, v, lo, hi, step any) (any, error) {
	var n int
	var rs []rune
	switch x := v.(type) {
	case string:
		rs = []rune(x)
		n = len(rs)
	case []any:
		n = len(x)
	case jtuple:
		n = len(x)
	default:
		return nil, fmt.Errorf("%s cannot be sliced", pyType(v))
	}
	idx, err := sliceIndexes(n, lo, hi, step)
	if err != nil {
		return nil, err
	}
	if err := s.spendValue(len(idx)); err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case string:
		out := make([]rune, len(idx))
		for i, k := range idx {
			out[i] = rs[k]
		}
		return string(out), nil
	case []any:
		return pick(x, idx), nil
	}
	return jtuple(pick(v.(jtuple), idx)), nil
}

func pick(xs []any, idx []int) []any {
	out := make([]any, len(idx))
	for i, k := range idx {
		out[i] = norm(xs[k])
	}
	return out
}

// sliceIndexes computes Python's slice indices for a sequence of n items.
func sliceIndexes(n int, lo, hi, step any) ([]int, error) {
	st := 1
	if step != nil {
		v, ok := num(step).(int)
		if !ok || v == 0 {
			return nil, fmt.Errorf("slice step must be a non-zero integer")
		}
		st = v
	}
	bound := func(v any, def int) (int, error) {
		if v == nil {
			return def, nil
		}
		i, ok := num(v).(int)
		if !ok {
			return 0, fmt.Errorf("slice indices must be integers")
		}
		if i < 0 {
			i += n
		}
		lowest, highest := 0, n
		if st < 0 {
			lowest, highest = -1, n-1
		}
		return min(max(i, lowest), highest), nil
	}
	first, last := 0, n
	if st < 0 {
		first, last = n-1, -1
	}
	a, err := bound(lo, first)
	if err != nil {
		return nil, err
	}
	b, err := bound(hi, last)
	if err != nil {
		return nil, err
	}
	var out []int
	for i := a; (st > 0 && i < b) || (st < 0 && i > b); i += st {
		out = append(out, i)
	}
	return out, nil
}

// iterate lists the items of an iterable value (a dict: its keys).
func iterate(s *jstate, v any) ([]any, error) {
	var out []any
	switch x := v.(type) {
	case jUndef:
		return nil, nil
	case []any:
		out = make([]any, len(x))
		for i, e := range x {
			out[i] = norm(e)
		}
	case jtuple:
		out = []any(x)
	case string:
		for _, r := range x {
			out = append(out, string(r))
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			out = append(out, k)
		}
	case *jdict:
		out = append(out, x.keys...)
	default:
		return nil, fmt.Errorf("%s is not iterable", pyType(v))
	}
	return out, s.spendValue(len(out))
}
