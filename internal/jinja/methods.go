package jinja

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// methodTable is the methods a template may call: a string's, a dict's
// (a datetime's are in time.go).
func methodTable() map[string]builtin {
	m := map[string]builtin{
		"get": methodGet, "keys": dictPart(0), "values": dictPart(1), "items": dictPart(2),
		"split":      strMethod(methodSplit),
		"lower":      strMap(strings.ToLower),
		"upper":      strMap(strings.ToUpper),
		"title":      strMap(title),
		"capitalize": strMap(capitalize),
		"strip":      strMethod(stripper(strings.Trim)),
		"lstrip":     strMethod(stripper(strings.TrimLeft)),
		"rstrip":     strMethod(stripper(strings.TrimRight)),
		"replace": strMethod(func(s *state, x string, a []any, kw map[string]any) (any, error) {
			return filterReplace(s, a, kw)
		}),
		"startswith": strMethod(func(s *state, x string, a []any, _ map[string]any) (any, error) {
			p, err := strArg(s, a, nil, 1, "", nil)
			return len(a) > 1 && strings.HasPrefix(x, p), err
		}),
		"endswith": strMethod(func(s *state, x string, a []any, _ map[string]any) (any, error) {
			p, err := strArg(s, a, nil, 1, "", nil)
			return len(a) > 1 && strings.HasSuffix(x, p), err
		}),
		"isdigit": strMethod(func(s *state, x string, _ []any, _ map[string]any) (any, error) {
			return x != "" && strings.IndexFunc(x, func(r rune) bool { return !unicode.IsDigit(r) }) < 0, nil
		}),
		"join": strMethod(func(s *state, sep string, a []any, _ map[string]any) (any, error) {
			if len(a) < 2 {
				return nil, errors.New("join() needs an iterable")
			}
			return filterJoin(s, []any{a[1], sep}, nil)
		}),
		"find": strMethod(func(s *state, x string, a []any, _ map[string]any) (any, error) {
			if len(a) < 2 {
				return nil, errors.New("find() needs a substring")
			}
			p, err := s.str(a[1])
			return strings.Index(x, p), err
		}),
	}
	return m
}

// strMethod is a method of strings; it is charged for scanning its string
// (and converting it to runes) before it runs.
func strMethod(f func(s *state, self string, a []any, kw map[string]any) (any, error)) builtin {
	return func(s *state, a []any, kw map[string]any) (any, error) {
		self, ok := a[0].(string)
		if !ok {
			return nil, fmt.Errorf("%s object has no such method", pyType(a[0]))
		}
		if err := s.spend(4*len(self)/BytesPerUnit + 1); err != nil {
			return nil, err
		}
		return f(s, self, a, kw)
	}
}

// strMap is a string method that maps its string (charged by strMethod).
func strMap(f func(string) string) builtin {
	return strMethod(func(s *state, x string, _ []any, _ map[string]any) (any, error) { return sized(f(x)) })
}

func methodGet(s *state, a []any, kw map[string]any) (any, error) {
	if len(a) < 2 || !isDict(a[0]) {
		return nil, errors.New("get() needs a dict and a key")
	}
	v, err := getItem(s, a[0], a[1])
	if err != nil {
		return nil, err
	}
	if _, undef := v.(undefinedValue); undef {
		return argOr(a, kw, 2, "default", nil), nil
	}
	return v, nil
}

// dictPart is keys() (0), values() (1) or items() (2).
func dictPart(which int) builtin {
	return func(s *state, a []any, _ map[string]any) (any, error) {
		if !isDict(a[0]) {
			return nil, fmt.Errorf("%s object has no such method", pyType(a[0]))
		}
		ks, vs, err := dictItems(s, a[0])
		if err != nil {
			return nil, err
		}
		if err := s.spendItems(3 * len(ks)); err != nil {
			return nil, err
		}
		out := make([]any, len(ks))
		for i := range ks {
			switch which {
			case 0:
				out[i] = ks[i]
			case 1:
				out[i] = vs[i]
			default:
				out[i] = tuple{ks[i], vs[i]}
			}
		}
		return out, nil
	}
}

// methodSplit is str.split(sep=None, maxsplit=-1); the parts are counted
// and charged before they are made.
func methodSplit(s *state, x string, a []any, kw map[string]any) (any, error) {
	sep, hasSep := arg(a, kw, 1, "sep")
	maxsplit, _ := num(argOr(a, kw, 2, "maxsplit", -1)).(int)
	var sp string
	if hasSep && sep != nil {
		var err error
		if sp, err = s.str(sep); err != nil {
			return nil, err
		}
		if sp == "" {
			return nil, errors.New("empty separator")
		}
	}
	var n int
	if sp == "" {
		n = countFields(x)
	} else {
		n = strings.Count(x, sp) + 1
	}
	if err := s.spendItems(2 * n); err != nil {
		return nil, err
	}
	var parts []string
	if sp == "" {
		parts = splitFields(x, maxsplit)
	} else if maxsplit < 0 {
		parts = strings.Split(x, sp)
	} else {
		parts = strings.SplitN(x, sp, maxsplit+1)
	}
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out, nil
}

func countFields(x string) int {
	n, in := 0, false
	for _, r := range x {
		sp := unicode.IsSpace(r)
		if !sp && !in {
			n++
		}
		in = !sp
	}
	return n
}

// splitFields is split() without a separator: runs of whitespace, at most
// maxsplit splits.
func splitFields(x string, maxsplit int) []string {
	parts := strings.Fields(x)
	if maxsplit < 0 || len(parts) <= maxsplit+1 {
		return parts
	}
	head := parts[:maxsplit]
	rest := x
	for _, h := range head {
		rest = strings.TrimLeft(rest, " \t\r\n")
		rest = rest[len(h):]
	}
	return append(head, strings.TrimLeft(rest, " \t\r\n"))
}

func stripper(trim func(string, string) string) func(*state, string, []any, map[string]any) (any, error) {
	return func(s *state, x string, a []any, kw map[string]any) (any, error) {
		chars := " \t\r\n\v\f"
		if c, ok := arg(a, kw, 1, "chars"); ok && c != nil {
			var err error
			if chars, err = s.str(c); err != nil {
				return nil, err
			}
		}
		return trim(x, chars), s.spendBytes(len(chars))
	}
}
