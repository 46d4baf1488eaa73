package jinja

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

func jinjaTests() map[string]jfunc {
	cmp := func(op string) jfunc {
		return func(s *jstate, a []any, _ map[string]any) (any, error) {
			if len(a) < 2 {
				return nil, errors.New("test needs a value to compare with")
			}
			return compare(op, a[0], a[1])
		}
	}
	kind := func(ok func(any) bool) jfunc {
		return func(s *jstate, a []any, _ map[string]any) (any, error) { return ok(a[0]), nil }
	}
	t := map[string]jfunc{
		"defined":   kind(func(v any) bool { _, u := v.(jUndef); return !u }),
		"undefined": kind(func(v any) bool { _, u := v.(jUndef); return u }),
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
		"lower":     kind(func(v any) bool { s, ok := v.(string); return ok && s == strings.ToLower(s) }),
		"upper":     kind(func(v any) bool { s, ok := v.(string); return ok && s == strings.ToUpper(s) }),
		"is_number": kind(isNumeric),
		"even":      kind(func(v any) bool { n, ok := norm(v).(int); return ok && n%2 == 0 }),
		"odd":       kind(func(v any) bool { n, ok := norm(v).(int); return ok && n%2 != 0 }),
		"match":     func(s *jstate, a []any, kw map[string]any) (any, error) { return regexFind(s, a, kw, true) },
		"search":    func(s *jstate, a []any, kw map[string]any) (any, error) { return regexFind(s, a, kw, false) },
		"contains":  func(s *jstate, a []any, _ map[string]any) (any, error) { return containsArg(a) },
		"in": func(s *jstate, a []any, _ map[string]any) (any, error) {
			if len(a) < 2 {
				return nil, errors.New("in needs a container")
			}
			return contains(a[1], a[0])
		},
		"divisibleby": func(s *jstate, a []any, _ map[string]any) (any, error) {
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

// maxRange bounds range(): Jinja's sandbox stops at 100,000; a value
// template needs far less.
const maxRange = 10000

func jinjaGlobals() map[string]jfunc {
	return map[string]jfunc{
		"iif":            needsArg(func(s *jstate, a []any, kw map[string]any) (any, error) { return iif(a, kw) }),
		"float":          needsArg(filterFloat),
		"int":            needsArg(filterInt),
		"bool":           needsArg(filterBool),
		"is_number":      func(s *jstate, a []any, _ map[string]any) (any, error) { return len(a) > 0 && isNumeric(a[0]), nil },
		"min":            func(s *jstate, a []any, _ map[string]any) (any, error) { return extremeArgs(s, a, -1) },
		"max":            func(s *jstate, a []any, _ map[string]any) (any, error) { return extremeArgs(s, a, 1) },
		"range":          globalRange,
		"dict":           globalDict,
		"dict.from_keys": func(s *jstate, a []any, kw map[string]any) (any, error) { return globalDict(s, a, nil) },
		"namespace":      globalNamespace,
		"zip":            globalZip,
	}
}

// needsArg guards a global that reads its first argument.
func needsArg(f jfunc) jfunc {
	return func(s *jstate, a []any, kw map[string]any) (any, error) {
		if len(a) == 0 {
			return nil, errors.New("missing argument")
		}
		return f(s, a, kw)
	}
}

func extremeArgs(s *jstate, a []any, sign int) (any, error) {
	if len(a) == 1 {
		return extreme(s, a[0], sign)
	}
	return extreme(s, []any(a), sign)
}

func globalRange(s *jstate, a []any, _ map[string]any) (any, error) {
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
	if n > maxRange {
		return nil, fmt.Errorf("range() of more than %d items", maxRange)
	}
	if err := s.spendValue(n); err != nil {
		return nil, err
	}
	out := make([]any, n)
	for i := range out {
		out[i] = start + i*step
	}
	return out, nil
}

// globalDict is dict(pairs) or dict(name=value, …).
func globalDict(s *jstate, a []any, kw map[string]any) (any, error) {
	d := &jdict{}
	if len(a) > 0 {
		if src := a[0]; isDict(src) {
			ks, vs := dictItems(src)
			for i := range ks {
				d.put(ks[i], vs[i])
			}
		} else {
			pairs, err := iterate(s, src)
			if err != nil {
				return nil, err
			}
			for _, p := range pairs {
				kv, ok := seqOf(p)
				if !ok || len(kv) != 2 {
					return nil, errors.New("dict() needs pairs")
				}
				d.put(norm(kv[0]), norm(kv[1]))
			}
		}
	}
	for _, k := range sortedKeys(kw) {
		d.put(k, kw[k])
	}
	return d, s.spendValue(len(d.keys))
}

func globalNamespace(s *jstate, a []any, kw map[string]any) (any, error) {
	ns := &jnamespace{m: map[string]any{}}
	for k, v := range kw {
		ns.m[k] = v
	}
	return ns, nil
}

func globalZip(s *jstate, a []any, _ map[string]any) (any, error) {
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
	out := make([]any, max(n, 0))
	for i := range out {
		t := make(jtuple, len(lists))
		for j := range lists {
			t[j] = lists[j][i]
		}
		out[i] = t
	}
	return out, s.spendValue(len(out))
}

func jinjaMethods() map[string]jfunc {
	str := func(f func(s *jstate, self string, a []any, kw map[string]any) (any, error)) jfunc {
		return func(s *jstate, a []any, kw map[string]any) (any, error) {
			self, ok := a[0].(string)
			if !ok {
				return nil, fmt.Errorf("%s object has no such method", pyType(a[0]))
			}
			return f(s, self, a, kw)
		}
	}
	m := map[string]jfunc{
		"get": methodGet, "keys": dictPart(0), "values": dictPart(1), "items": dictPart(2),
		"split":      str(methodSplit),
		"lower":      str(func(s *jstate, x string, _ []any, _ map[string]any) (any, error) { return strings.ToLower(x), nil }),
		"upper":      str(func(s *jstate, x string, _ []any, _ map[string]any) (any, error) { return strings.ToUpper(x), nil }),
		"title":      str(func(s *jstate, x string, _ []any, _ map[string]any) (any, error) { return title(x), nil }),
		"capitalize": str(func(s *jstate, x string, _ []any, _ map[string]any) (any, error) { return capitalize(x), nil }),
		"strip":      str(stripper(strings.Trim)),
		"lstrip":     str(stripper(strings.TrimLeft)),
		"rstrip":     str(stripper(strings.TrimRight)),
		"replace": str(func(s *jstate, x string, a []any, kw map[string]any) (any, error) {
			return filterReplace(s, a, kw)
		}),
		"startswith": str(func(s *jstate, x string, a []any, _ map[string]any) (any, error) {
			return len(a) > 1 && strings.HasPrefix(x, pyStr(a[1])), nil
		}),
		"endswith": str(func(s *jstate, x string, a []any, _ map[string]any) (any, error) {
			return len(a) > 1 && strings.HasSuffix(x, pyStr(a[1])), nil
		}),
		"isdigit": str(func(s *jstate, x string, _ []any, _ map[string]any) (any, error) {
			return x != "" && strings.IndexFunc(x, func(r rune) bool { return !unicode.IsDigit(r) }) < 0, nil
		}),
		"join": str(func(s *jstate, sep string, a []any, _ map[string]any) (any, error) {
			if len(a) < 2 {
				return nil, errors.New("join() needs an iterable")
			}
			return filterJoin(s, []any{a[1], sep}, nil)
		}),
		"find": str(func(s *jstate, x string, a []any, _ map[string]any) (any, error) {
			if len(a) < 2 {
				return nil, errors.New("find() needs a substring")
			}
			return strings.Index(x, pyStr(a[1])), nil
		}),
	}
	return m
}

func methodGet(s *jstate, a []any, kw map[string]any) (any, error) {
	if len(a) < 2 || !isDict(a[0]) {
		return nil, errors.New("get() needs a dict and a key")
	}
	v, err := getItem(a[0], a[1])
	if err != nil {
		return nil, err
	}
	if _, undef := v.(jUndef); undef {
		return argOr(a, kw, 2, "default", nil), nil
	}
	return v, nil
}

// dictPart is keys() (0), values() (1) or items() (2).
func dictPart(which int) jfunc {
	return func(s *jstate, a []any, _ map[string]any) (any, error) {
		if !isDict(a[0]) {
			return nil, fmt.Errorf("%s object has no such method", pyType(a[0]))
		}
		ks, vs := dictItems(a[0])
		out := make([]any, len(ks))
		for i := range ks {
			switch which {
			case 0:
				out[i] = ks[i]
			case 1:
				out[i] = vs[i]
			default:
				out[i] = jtuple{ks[i], vs[i]}
			}
		}
		return out, s.spendValue(len(out))
	}
}

func methodSplit(s *jstate, x string, a []any, kw map[string]any) (any, error) {
	sep, hasSep := arg(a, kw, 1, "sep")
	maxsplit, _ := num(argOr(a, kw, 2, "maxsplit", -1)).(int)
	var parts []string
	if !hasSep || sep == nil {
		parts = strings.Fields(x)
		if maxsplit >= 0 && len(parts) > maxsplit+1 {
			f := strings.Fields(x)
			head := f[:maxsplit]
			rest := x
			for _, h := range head {
				rest = strings.TrimLeft(rest, " \t\r\n")
				rest = rest[len(h):]
			}
			parts = append(head, strings.TrimLeft(rest, " \t\r\n"))
		}
	} else {
		sp := pyStr(sep)
		if sp == "" {
			return nil, errors.New("empty separator")
		}
		parts = strings.SplitN(x, sp, maxsplit+1)
		if maxsplit < 0 {
			parts = strings.Split(x, sp)
		}
	}
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, s.spendValue(len(out))
}

func stripper(trim func(string, string) string) func(*jstate, string, []any, map[string]any) (any, error) {
	return func(s *jstate, x string, a []any, kw map[string]any) (any, error) {
		chars := " \t\r\n\v\f"
		if c, ok := arg(a, kw, 1, "chars"); ok && c != nil {
			chars = pyStr(c)
		}
		return trim(x, chars), nil
	}
}
