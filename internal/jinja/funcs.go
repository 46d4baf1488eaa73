package jinja

import (
	"errors"
	"fmt"
	"strings"
)

func testTable() map[string]builtin {
	cmp := func(op string) builtin {
		return func(s *state, a []any, _ map[string]any) (any, error) {
			if len(a) < 2 {
				return nil, errors.New("test needs a value to compare with")
			}
			return s.compare(op, a[0], a[1])
		}
	}
	kind := func(ok func(any) bool) builtin {
		return func(s *state, a []any, _ map[string]any) (any, error) { return ok(a[0]), nil }
	}
	t := map[string]builtin{
		"defined":   kind(func(v any) bool { _, u := v.(undefinedValue); return !u }),
		"undefined": kind(func(v any) bool { _, u := v.(undefinedValue); return u }),
		"none":      kind(func(v any) bool { return v == nil }),
		"boolean":   kind(func(v any) bool { _, ok := v.(bool); return ok }),
		"true":      kind(func(v any) bool { return v == true }),
		"false":     kind(func(v any) bool { return v == false }),
		"number":    kind(func(v any) bool { _, b := v.(bool); return isNumber(num(v)) && !b }),
		"integer":   kind(func(v any) bool { _, ok := norm(v).(int); return ok }),
		"float":     kind(func(v any) bool { _, ok := norm(v).(float64); return ok }),
		"string":    kind(func(v any) bool { _, ok := v.(string); return ok }),
		"mapping":   kind(isDict),
		"sequence":  kind(func(v any) bool { _, ok := seqOf(v); _, s := v.(string); return ok || s || isDict(v) }),
		"iterable":  kind(func(v any) bool { _, ok := seqOf(v); _, s := v.(string); return ok || s || isDict(v) }),
		"lower":     caseTest(strings.ToLower),
		"upper":     caseTest(strings.ToUpper),
		"is_number": kind(isNumeric),
		"even":      kind(func(v any) bool { n, ok := norm(v).(int); return ok && n%2 == 0 }),
		"odd":       kind(func(v any) bool { n, ok := norm(v).(int); return ok && n%2 != 0 }),
		"match":     func(s *state, a []any, kw map[string]any) (any, error) { return regexFind(s, a, kw, true) },
		"search":    func(s *state, a []any, kw map[string]any) (any, error) { return regexFind(s, a, kw, false) },
		"contains":  func(s *state, a []any, _ map[string]any) (any, error) { return containsArg(s, a) },
		"in": func(s *state, a []any, _ map[string]any) (any, error) {
			if len(a) < 2 {
				return nil, errors.New("in needs a container")
			}
			return s.contains(a[1], a[0])
		},
		"divisibleby": func(s *state, a []any, _ map[string]any) (any, error) {
			n, ok1 := pyInt(a[0], 10)
			d, ok2 := pyInt(argOr(a, nil, 1, "num", nil), 10)
			return ok1 && ok2 && d != 0 && n%d == 0, nil
		},
	}
	for _, c := range [][]string{{"==", "eq", "equalto"}, {"!=", "ne"}, {"<", "lt", "lessthan"}, {"<=", "le"},
		{">", "gt", "greaterthan"}, {">=", "ge"}} {
		for _, name := range c {
			t[name] = cmp(c[0])
		}
	}
	t["sameas"] = t["=="]
	return t
}

// caseTest is the lower and upper tests: the mapping is charged first.
func caseTest(f func(string) string) builtin {
	return func(s *state, a []any, _ map[string]any) (any, error) {
		str, ok := a[0].(string)
		if !ok {
			return false, nil
		}
		if err := s.spend(4*len(str)/BytesPerUnit + 1); err != nil {
			return nil, err
		}
		return str == f(str), nil
	}
}

func globalTable() map[string]builtin {
	return map[string]builtin{
		"iif":            needsArg(func(s *state, a []any, kw map[string]any) (any, error) { return iif(a, kw) }),
		"float":          needsArg(filterFloat),
		"int":            needsArg(filterInt),
		"bool":           needsArg(filterBool),
		"is_number":      func(s *state, a []any, _ map[string]any) (any, error) { return len(a) > 0 && isNumeric(a[0]), nil },
		"min":            func(s *state, a []any, _ map[string]any) (any, error) { return extremeArgs(s, a, -1) },
		"max":            func(s *state, a []any, _ map[string]any) (any, error) { return extremeArgs(s, a, 1) },
		"range":          globalRange,
		"dict":           globalDict,
		"dict.from_keys": func(s *state, a []any, kw map[string]any) (any, error) { return globalDict(s, a, nil) },
		"namespace":      globalNamespace,
		"zip":            globalZip,
	}
}

// needsArg guards a global that reads its first argument.
func needsArg(f builtin) builtin {
	return func(s *state, a []any, kw map[string]any) (any, error) {
		if len(a) == 0 {
			return nil, errors.New("missing argument")
		}
		return f(s, a, kw)
	}
}

func extremeArgs(s *state, a []any, sign int) (any, error) {
	if len(a) == 1 {
		return extreme(s, a[0], sign)
	}
	return extreme(s, []any(a), sign)
}

func globalRange(s *state, a []any, _ map[string]any) (any, error) {
	var b [3]int
	b[2] = 1
	for i, v := range a {
		n, ok := num(v).(int)
		if !ok || i > 2 {
			return nil, errors.New("range() takes up to three integers")
		}
		b[i] = n
	}
	start, stop, step := 0, b[0], b[2]
	if len(a) >= 2 {
		start, stop = b[0], b[1]
	}
	if step == 0 {
		return nil, errors.New("range() step must not be zero")
	}
	n := 0
	if step > 0 && stop > start {
		n = (stop - start + step - 1) / step
	} else if step < 0 && start > stop {
		n = (start - stop - step - 1) / -step
	}
	if n > MaxRange {
		return nil, fmt.Errorf("range() of more than %d items", MaxRange)
	}
	if err := s.spendItems(n); err != nil {
		return nil, err
	}
	out := make([]any, n)
	for i := range out {
		out[i] = start + i*step
	}
	return out, nil
}

// globalDict is dict(pairs) or dict(name=value, …); every key is compared
// with those before it, and each comparison is charged.
func globalDict(s *state, a []any, kw map[string]any) (any, error) {
	d := &dict{}
	if len(a) > 0 {
		if err := dictFrom(s, d, a[0]); err != nil {
			return nil, err
		}
	}
	for _, k := range sortedKeys(kw) {
		if err := d.put(s, k, kw[k]); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func dictFrom(s *state, d *dict, src any) error {
	if isDict(src) {
		ks, vs, err := dictItems(s, src)
		if err != nil {
			return err
		}
		for i := range ks {
			if err := d.put(s, ks[i], vs[i]); err != nil {
				return err
			}
		}
		return nil
	}
	pairs, err := iterate(s, src)
	if err != nil {
		return err
	}
	for _, p := range pairs {
		kv, ok := seqOf(p)
		if !ok || len(kv) != 2 {
			return errors.New("dict() needs pairs")
		}
		if err := d.put(s, norm(kv[0]), norm(kv[1])); err != nil {
			return err
		}
	}
	return nil
}

func globalNamespace(s *state, a []any, kw map[string]any) (any, error) {
	ns := &namespace{m: map[string]any{}}
	for k, v := range kw {
		ns.m[k] = v
	}
	return ns, nil
}

func globalZip(s *state, a []any, _ map[string]any) (any, error) {
	lists := make([][]any, len(a))
	n := -1
	for i, v := range a {
		items, err := iterate(s, v)
		if err != nil {
			return nil, err
		}
		lists[i] = items
		if n < 0 || len(items) < n {
			n = len(items)
		}
	}
	if err := s.spendItems(max(n, 0) * (1 + len(lists))); err != nil {
		return nil, err
	}
	out := make([]any, max(n, 0))
	for i := range out {
		t := make(tuple, len(lists))
		for j := range lists {
			t[j] = lists[j][i]
		}
		out[i] = t
	}
	return out, nil
}
