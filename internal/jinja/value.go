package jinja

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Template values follow Python's: None (nil), bool, int, float64, string,
// list ([]any), tuple (tuple), dict (map[string]any from JSON, *dict from
// literals: any keys, insertion order) and Jinja's undefined (undefinedValue).
// Numbers from a payload arrive as json.Number and read as int or float
// by their literal, as Python's json module reads them.

// undefinedValue is an undefined value: printed as nothing, false, and an error
// when a filter needs a real value.
type undefinedValue struct{ name string }

// tuple is an immutable sequence; it never equals a list.
type tuple []any

// boundMethod is a method taken without calling it (value_json.items):
// Jinja finds the method before the key.
type boundMethod struct{ name string }

// dict is a dict made by a template: any keys, insertion order.
type dict struct {
	keys, vals []any
}

// put sets k; each key compared is charged.
func (d *dict) put(s *state, k, v any) error {
	i, err := d.find(s, k)
	if err != nil {
		return err
	}
	if i >= 0 {
		d.vals[i] = v
		return nil
	}
	if err := s.spendItems(2); err != nil {
		return err
	}
	d.keys, d.vals = append(d.keys, k), append(d.vals, v)
	return nil
}

func (d *dict) get(s *state, k any) (any, bool, error) {
	i, err := d.find(s, k)
	if i < 0 || err != nil {
		return nil, false, err
	}
	return d.vals[i], true, nil
}

// find is the index of key k, -1 when it is absent.
func (d *dict) find(s *state, k any) (int, error) {
	for i, x := range d.keys {
		eq, err := s.equal(x, k)
		if err != nil {
			return -1, err
		}
		if eq {
			return i, nil
		}
	}
	return -1, nil
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
	case nil, undefinedValue:
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
	case tuple:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	case *dict:
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
	case tuple:
		return "tuple"
	case map[string]any, *dict:
		return "dict"
	case undefinedValue:
		return "Undefined"
	case datetime:
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

// dictMethods are the methods Jinja finds before a dict's key of that name.
var dictMethods = map[string]bool{"keys": true, "values": true, "items": true, "get": true, "update": true,
	"pop": true, "copy": true, "clear": true, "setdefault": true, "popitem": true, "fromkeys": true}

// getAttr is Jinja's x.name: an attribute (a method), else the item.
func getAttr(s *state, v any, name string) (any, error) {
	switch x := v.(type) {
	case undefinedValue:
		return nil, fmt.Errorf("%s is undefined", undefName(x))
	case map[string]any:
		if dictMethods[name] {
			return boundMethod{name: name}, nil
		}
		if e, ok := x[name]; ok {
			return norm(e), nil
		}
	case *dict:
		if dictMethods[name] {
			return boundMethod{name: name}, nil
		}
		if e, ok, err := x.get(s, name); ok || err != nil {
			return e, err
		}
	case *namespace:
		if e, ok := x.m[name]; ok {
			return e, nil
		}
	case *loopVar:
		if e, ok := x.attr(name); ok {
			return e, nil
		}
	case datetime:
		if e, ok := x.attr(name); ok {
			return e, nil
		}
	case string:
		if _, ok := methods[name]; ok {
			return boundMethod{name: name}, nil
		}
	}
	if err := s.spendBytes(2*len(name) + 32); err != nil { // the message quotes the name
		return nil, err
	}
	return undefinedValue{name: pyType(v) + " object has no attribute " + pyQuote(name)}, nil
}

func undefName(u undefinedValue) string {
	if u.name == "" {
		return "value"
	}
	return pyQuote(u.name)
}

// getItem is Jinja's x[k]: the item, else an attribute named k.
func getItem(s *state, v any, k any) (any, error) {
	switch x := v.(type) {
	case undefinedValue:
		return nil, fmt.Errorf("%s is undefined", undefName(x))
	case map[string]any:
		if ks, ok := k.(string); ok {
			if e, ok := x[ks]; ok {
				return norm(e), nil
			}
		}
	case *dict:
		if e, ok, err := x.get(s, k); ok || err != nil {
			return e, err
		}
	case []any:
		return index(x, k, "list")
	case tuple:
		return index(x, k, "tuple")
	case string:
		if i, ok := num(k).(int); ok {
			return runeAt(s, x, i)
		}
	}
	if ks, ok := k.(string); ok {
		return getAttr(s, v, ks)
	}
	return undefinedValue{name: pyType(v) + " object has no element " + brief(k)}, nil
}

// runeAt is str[i] (i < 0 counts from the end), charged by the bytes it
// scans.
func runeAt(s *state, x string, i int) (any, error) {
	if err := s.spendBytes(len(x)); err != nil {
		return nil, err
	}
	if i < 0 {
		i += utf8.RuneCountInString(x)
	}
	if i >= 0 {
		for _, r := range x {
			if i == 0 {
				return string(r), nil
			}
			i--
		}
	}
	return undefinedValue{name: "string index out of range"}, nil
}

func index(xs []any, k any, typ string) (any, error) {
	i, ok := k.(int)
	if !ok {
		if n, isNum := k.(json.Number); isNum {
			i, ok = num(n).(int)
		}
	}
	if !ok {
		return undefinedValue{name: typ + " indices must be integers"}, nil
	}
	if i < 0 {
		i += len(xs)
	}
	if i < 0 || i >= len(xs) {
		return undefinedValue{name: typ + " index out of range"}, nil
	}
	return norm(xs[i]), nil
}

// slice is x[lo:hi:step] of a string, list or tuple.
func slice(s *state, v, lo, hi, step any) (any, error) {
	var n int
	var rs []rune
	switch x := v.(type) {
	case string:
		if err := s.spendBytes(4 * len(x)); err != nil {
			return nil, err
		}
		rs = []rune(x)
		n = len(rs)
	case []any:
		n = len(x)
	case tuple:
		n = len(x)
	default:
		return nil, fmt.Errorf("%s cannot be sliced", pyType(v))
	}
	idx, err := sliceIndexes(s, n, lo, hi, step)
	if err != nil {
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
	return tuple(pick(v.(tuple), idx)), nil
}

func pick(xs []any, idx []int) []any {
	out := make([]any, len(idx))
	for i, k := range idx {
		out[i] = norm(xs[k])
	}
	return out
}

// sliceIndexes computes Python's slice indices for a sequence of n items.
func sliceIndexes(s *state, n int, lo, hi, step any) ([]int, error) {
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
	count := 0
	if st > 0 && b > a {
		count = (b - a + st - 1) / st
	} else if st < 0 && a > b {
		count = (a - b - st - 1) / -st
	}
	if err := s.spendItems(count); err != nil {
		return nil, err
	}
	out := make([]int, 0, count)
	for i := a; (st > 0 && i < b) || (st < 0 && i > b); i += st {
		out = append(out, i)
	}
	return out, nil
}

// iterate lists the items of an iterable value (a dict: its keys),
// charged before they are made.
func iterate(s *state, v any) ([]any, error) {
	switch x := v.(type) {
	case undefinedValue:
		return nil, nil
	case []any:
		if err := s.spendItems(len(x)); err != nil {
			return nil, err
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = norm(e)
		}
		return out, nil
	case tuple:
		return []any(x), s.spendItems(len(x))
	case string:
		if err := s.spendItems(utf8.RuneCountInString(x)); err != nil {
			return nil, err
		}
		out := make([]any, 0, utf8.RuneCountInString(x))
		for _, r := range x {
			out = append(out, string(r))
		}
		return out, nil
	case map[string]any:
		if err := s.spendItems(2 * len(x)); err != nil {
			return nil, err
		}
		out := make([]any, 0, len(x))
		for _, k := range sortedKeys(x) {
			out = append(out, k)
		}
		return out, nil
	case *dict:
		if err := s.spendItems(len(x.keys)); err != nil {
			return nil, err
		}
		return append([]any(nil), x.keys...), nil
	}
	return nil, fmt.Errorf("%s is not iterable", pyType(v))
}
