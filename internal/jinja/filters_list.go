package jinja

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

func listFilterTable() map[string]builtin {
	return map[string]builtin{
		"map":                 filterMap,
		"select":              func(s *state, a []any, kw map[string]any) (any, error) { return selectBy(s, a, kw, false, true) },
		"reject":              func(s *state, a []any, kw map[string]any) (any, error) { return selectBy(s, a, kw, false, false) },
		"selectattr":          func(s *state, a []any, kw map[string]any) (any, error) { return selectBy(s, a, kw, true, true) },
		"rejectattr":          func(s *state, a []any, kw map[string]any) (any, error) { return selectBy(s, a, kw, true, false) },
		"sort":                filterSort,
		"unique":              filterUnique,
		"reverse":             filterReverse,
		"sum":                 filterSum,
		"max":                 func(s *state, a []any, kw map[string]any) (any, error) { return extreme(s, a[0], 1) },
		"min":                 func(s *state, a []any, kw map[string]any) (any, error) { return extreme(s, a[0], -1) },
		"items":               filterItems,
		"regex_match":         func(s *state, a []any, kw map[string]any) (any, error) { return regexFind(s, a, kw, true) },
		"regex_search":        func(s *state, a []any, kw map[string]any) (any, error) { return regexFind(s, a, kw, false) },
		"regex_replace":       filterRegexReplace,
		"regex_findall":       filterRegexFindall,
		"regex_findall_index": filterRegexFindallIndex,
		"bitwise_and":         func(s *state, a []any, kw map[string]any) (any, error) { return bitwise(a, kw, '&') },
		"bitwise_or":          func(s *state, a []any, kw map[string]any) (any, error) { return bitwise(a, kw, '|') },
		"bitwise_xor":         func(s *state, a []any, kw map[string]any) (any, error) { return bitwise(a, kw, '^') },
		"ord":                 filterOrd,
		"base64_encode":       func(s *state, a []any, _ map[string]any) (any, error) { return base64Filter(s, a, false) },
		"base64_decode":       func(s *state, a []any, _ map[string]any) (any, error) { return base64Filter(s, a, true) },
		"contains":            func(s *state, a []any, _ map[string]any) (any, error) { return containsArg(s, a) },
	}
}

// attrOf reads an attribute or, for an int, an index (map(attribute=1)).
func attrOf(s *state, v, attr any) (any, error) {
	if name, ok := attr.(string); ok {
		if err := s.spendBytes(len(name)); err != nil {
			return nil, err
		}
		for _, part := range strings.Split(name, ".") {
			var err error
			if i, convErr := strconv.Atoi(part); convErr == nil {
				v, err = getItem(s, v, i)
			} else {
				v, err = getItem(s, v, part)
			}
			if err != nil {
				return nil, err
			}
		}
		return v, nil
	}
	return getItem(s, v, num(attr))
}

// filterMap is map(filter, args…) or map(attribute=name, default=…).
func filterMap(s *state, a []any, kw map[string]any) (any, error) {
	items, err := iterate(s, a[0])
	if err != nil {
		return nil, err
	}
	if err := s.spendItems(len(items)); err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	if attr, ok := kw["attribute"]; ok {
		for i, it := range items {
			v, err := attrOf(s, it, attr)
			if err != nil {
				return nil, err
			}
			if _, undef := v.(undefinedValue); undef {
				if d, ok := kw["default"]; ok {
					v = d
				}
			}
			out[i] = v
		}
		return out, nil
	}
	if len(a) < 2 {
		return nil, errors.New("map needs a filter name or attribute=")
	}
	name, _ := a[1].(string)
	f, ok := filters[name]
	if !ok {
		return nil, fmt.Errorf("no filter named %s", brief(a[1]))
	}
	for i, it := range items {
		if out[i], err = f(s, append([]any{it}, a[2:]...), nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// selectBy is select/reject(test, args…) and selectattr/rejectattr(attr,
// test, args…); without a test, truthiness decides.
func selectBy(s *state, a []any, kw map[string]any, byAttr, keep bool) (any, error) {
	items, err := iterate(s, a[0])
	if err != nil {
		return nil, err
	}
	rest := a[1:]
	var attr any
	if byAttr {
		if len(rest) == 0 {
			return nil, errors.New("selectattr needs an attribute")
		}
		attr, rest = rest[0], rest[1:]
	}
	var test builtin
	if len(rest) > 0 {
		name, _ := rest[0].(string)
		t, ok := tests[name]
		if !ok {
			return nil, fmt.Errorf("no test named %s", brief(rest[0]))
		}
		test, rest = t, rest[1:]
	}
	out := []any{}
	for _, it := range items {
		v := it
		if byAttr {
			if v, err = attrOf(s, it, attr); err != nil {
				return nil, err
			}
		}
		ok := truthy(v)
		if test != nil {
			r, err := test(s, append([]any{v}, rest...), nil)
			if err != nil {
				return nil, err
			}
			ok = truthy(r)
		}
		if ok == keep {
			out = append(out, it)
		}
	}
	return out, nil
}

func filterSort(s *state, a []any, kw map[string]any) (any, error) {
	items, err := iterate(s, a[0])
	if err != nil {
		return nil, err
	}
	if err := s.spendItems(3 * len(items)); err != nil { // keys, indexes, result
		return nil, err
	}
	reverse := truthy(argOr(a, kw, 1, "reverse", false))
	attr, hasAttr := arg(a, kw, 3, "attribute")
	keys := items
	if hasAttr {
		keys = make([]any, len(items))
		for i, it := range items {
			if keys[i], err = attrOf(s, it, attr); err != nil {
				return nil, err
			}
		}
	}
	idx := make([]int, len(items))
	for i := range idx {
		idx[i] = i
	}
	var sortErr error
	sort.SliceStable(idx, func(i, j int) bool {
		if sortErr != nil { // the budget or an error stopped it: finish at once
			return false
		}
		c, err := s.order(keys[idx[i]], keys[idx[j]], 0)
		sortErr = err
		if reverse {
			return c > 0
		}
		return c < 0
	})
	if sortErr != nil {
		return nil, sortErr
	}
	return pick(items, idx), nil
}

func filterUnique(s *state, a []any, _ map[string]any) (any, error) {
	items, err := iterate(s, a[0])
	if err != nil {
		return nil, err
	}
	out := []any{}
	for _, it := range items {
		in, err := s.seqContains(out, it)
		if err != nil {
			return nil, err
		}
		if !in {
			out = append(out, it)
		}
	}
	return out, nil
}

func filterReverse(s *state, a []any, _ map[string]any) (any, error) {
	if str, ok := a[0].(string); ok {
		if err := s.spend(4*len(str)/BytesPerUnit + 1); err != nil {
			return nil, err
		}
		r := []rune(str)
		for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
			r[i], r[j] = r[j], r[i]
		}
		return string(r), nil
	}
	items, err := iterate(s, a[0])
	if err != nil {
		return nil, err
	}
	if err := s.spendItems(len(items)); err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	return out, nil
}

func filterSum(s *state, a []any, kw map[string]any) (any, error) {
	items, err := iterate(s, a[0])
	if err != nil {
		return nil, err
	}
	total := argOr(a, kw, 2, "start", 0)
	attr, hasAttr := arg(a, kw, 1, "attribute")
	for _, it := range items {
		if hasAttr && attr != nil {
			if it, err = attrOf(s, it, attr); err != nil {
				return nil, err
			}
		}
		if total, err = binaryOp(s, "+", total, it); err != nil {
			return nil, err
		}
	}
	return total, nil
}

func extreme(s *state, v any, sign int) (any, error) {
	items, err := iterate(s, v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return undefinedValue{name: "no items"}, nil
	}
	best := items[0]
	for _, it := range items[1:] {
		c, err := s.order(it, best, 0)
		if err != nil {
			return nil, err
		}
		if c*sign > 0 {
			best = it
		}
	}
	return best, nil
}

func filterItems(s *state, a []any, _ map[string]any) (any, error) {
	if _, ok := a[0].(undefinedValue); ok {
		return []any{}, nil
	}
	if !isDict(a[0]) {
		return nil, fmt.Errorf("can only get item pairs from a mapping, not %s", pyType(a[0]))
	}
	keys, vals, err := dictItems(s, a[0])
	if err != nil {
		return nil, err
	}
	if err := s.spendItems(3 * len(keys)); err != nil {
		return nil, err
	}
	out := make([]any, len(keys))
	for i := range keys {
		out[i] = tuple{keys[i], vals[i]}
	}
	return out, nil
}

func isDict(v any) bool {
	switch v.(type) {
	case map[string]any, *dict:
		return true
	}
	return false
}

func bitwise(a []any, kw map[string]any, op byte) (any, error) {
	x, ok1 := pyInt(a[0], 10)
	y, ok2 := pyInt(argOr(a, kw, 1, "other", nil), 10)
	if !ok1 || !ok2 {
		return nil, errors.New("bitwise filters need integers")
	}
	switch op {
	case '&':
		return x & y, nil
	case '|':
		return x | y, nil
	}
	return x ^ y, nil
}

func filterOrd(s *state, a []any, _ map[string]any) (any, error) {
	str, err := s.str(a[0])
	if err != nil {
		return nil, err
	}
	if n := utf8.RuneCountInString(str); n != 1 {
		return nil, fmt.Errorf("ord() expected a character, but string of length %d found", n)
	}
	r, _ := utf8.DecodeRuneInString(str)
	return int(r), nil
}

func containsArg(s *state, a []any) (any, error) {
	if len(a) < 2 {
		return nil, errors.New("contains needs a value")
	}
	return s.contains(a[0], a[1])
}

// parseFloatExact rounds f to n decimals (the exact value, half to even)
// as Python's round does.
func parseFloatExact(f float64, n int) (float64, error) {
	return strconv.ParseFloat(strconv.FormatFloat(f, 'f', n, 64), 64)
}
