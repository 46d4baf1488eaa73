package jinja

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

func jinjaFilters2() map[string]jfunc {
	return map[string]jfunc{
		"map":                 filterMap,
		"select":              func(s *jstate, a []any, kw map[string]any) (any, error) { return selectBy(s, a, kw, false, true) },
		"reject":              func(s *jstate, a []any, kw map[string]any) (any, error) { return selectBy(s, a, kw, false, false) },
		"selectattr":          func(s *jstate, a []any, kw map[string]any) (any, error) { return selectBy(s, a, kw, true, true) },
		"rejectattr":          func(s *jstate, a []any, kw map[string]any) (any, error) { return selectBy(s, a, kw, true, false) },
		"sort":                filterSort,
		"unique":              filterUnique,
		"reverse":             filterReverse,
		"sum":                 filterSum,
		"max":                 func(s *jstate, a []any, kw map[string]any) (any, error) { return extreme(s, a[0], 1) },
		"min":                 func(s *jstate, a []any, kw map[string]any) (any, error) { return extreme(s, a[0], -1) },
		"items":               filterItems,
		"regex_match":         func(s *jstate, a []any, kw map[string]any) (any, error) { return regexFind(s, a, kw, true) },
		"regex_search":        func(s *jstate, a []any, kw map[string]any) (any, error) { return regexFind(s, a, kw, false) },
		"regex_replace":       filterRegexReplace,
		"regex_findall":       filterRegexFindall,
		"regex_findall_index": filterRegexFindallIndex,
		"bitwise_and":         func(s *jstate, a []any, kw map[string]any) (any, error) { return bitwise(a, kw, '&') },
		"bitwise_or":          func(s *jstate, a []any, kw map[string]any) (any, error) { return bitwise(a, kw, '|') },
		"bitwise_xor":         func(s *jstate, a []any, kw map[string]any) (any, error) { return bitwise(a, kw, '^') },
		"ord":                 filterOrd,
		"base64_encode":       func(s *jstate, a []any, _ map[string]any) (any, error) { return base64Filter(s, a, false) },
		"base64_decode":       func(s *jstate, a []any, _ map[string]any) (any, error) { return base64Filter(s, a, true) },
		"contains":            func(s *jstate, a []any, _ map[string]any) (any, error) { return containsArg(a) },
	}
}

// attrOf reads an attribute or, for an int, an index (map(attribute=1)).
func attrOf(v, attr any) (any, error) {
	if name, ok := attr.(string); ok {
		for _, part := range strings.Split(name, ".") {
			var err error
			if i, convErr := strconv.Atoi(part); convErr == nil {
				v, err = getItem(v, i)
			} else {
				v, err = getItem(v, part)
			}
			if err != nil {
				return nil, err
			}
		}
		return v, nil
	}
	return getItem(v, num(attr))
}

// filterMap is map(filter, args…) or map(attribute=name, default=…).
func filterMap(s *jstate, a []any, kw map[string]any) (any, error) {
	items, err := iterate(s, a[0])
	if err != nil {
		return nil, err
	}
	out := make([]any, len(items))
	if attr, ok := kw["attribute"]; ok {
		for i, it := range items {
			v, err := attrOf(it, attr)
			if err != nil {
				return nil, err
			}
			if _, undef := v.(jUndef); undef {
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
	f, ok := jFilters[pyStr(a[1])]
	if !ok {
		return nil, fmt.Errorf("no filter named %s", pyStr(a[1]))
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
func selectBy(s *jstate, a []any, kw map[string]any, byAttr, keep bool) (any, error) {
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
	var test jfunc
	if len(rest) > 0 {
		t, ok := jTests[pyStr(rest[0])]
		if !ok {
			return nil, fmt.Errorf("no test named %s", pyStr(rest[0]))
		}
		test, rest = t, rest[1:]
	}
	out := []any{}
	for _, it := range items {
		v := it
		if byAttr {
			if v, err = attrOf(it, attr); err != nil {
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

func filterSort(s *jstate, a []any, kw map[string]any) (any, error) {
	items, err := iterate(s, a[0])
	if err != nil {
		return nil, err
	}
	reverse := truthy(argOr(a, kw, 1, "reverse", false))
	attr, hasAttr := arg(a, kw, 3, "attribute")
	keys := items
	if hasAttr {
		keys = make([]any, len(items))
		for i, it := range items {
			if keys[i], err = attrOf(it, attr); err != nil {
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
		c, err := order(keys[idx[i]], keys[idx[j]])
		if err != nil {
			sortErr = err
		}
		if reverse {
			return c > 0
		}
		return c < 0
	})
	if err := s.spendValue(len(items) * 8); err != nil {
		return nil, err
	}
	return pick(items, idx), sortErr
}

func filterUnique(s *jstate, a []any, _ map[string]any) (any, error) {
	items, err := iterate(s, a[0])
	if err != nil {
		return nil, err
	}
	if err := s.spend(len(items) * len(items) / 16); err != nil {
		return nil, err
	}
	out := []any{}
	for _, it := range items {
		if !seqContains(out, it) {
			out = append(out, it)
		}
	}
	return out, nil
}

func filterReverse(s *jstate, a []any, _ map[string]any) (any, error) {
	if str, ok := a[0].(string); ok {
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
	out := make([]any, len(items))
	for i, it := range items {
		out[len(items)-1-i] = it
	}
	return out, nil
}

func filterSum(s *jstate, a []any, kw map[string]any) (any, error) {
	items, err := iterate(s, a[0])
	if err != nil {
		return nil, err
	}
	total := argOr(a, kw, 2, "start", 0)
	attr, hasAttr := arg(a, kw, 1, "attribute")
	for _, it := range items {
		if hasAttr && attr != nil {
			if it, err = attrOf(it, attr); err != nil {
				return nil, err
			}
		}
		if total, err = binaryOp(s, "+", total, it); err != nil {
			return nil, err
		}
	}
	return total, nil
}

func extreme(s *jstate, v any, sign int) (any, error) {
	items, err := iterate(s, v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return jUndef{name: "no items"}, nil
	}
	best := items[0]
	for _, it := range items[1:] {
		c, err := order(it, best)
		if err != nil {
			return nil, err
		}
		if c*sign > 0 {
			best = it
		}
	}
	return best, nil
}

func filterItems(s *jstate, a []any, _ map[string]any) (any, error) {
	if _, ok := a[0].(jUndef); ok {
		return []any{}, nil
	}
	keys, vals := dictItems(a[0])
	if keys == nil && !isDict(a[0]) {
		return nil, fmt.Errorf("can only get item pairs from a mapping, not %s", pyType(a[0]))
	}
	out := make([]any, len(keys))
	for i := range keys {
		out[i] = jtuple{keys[i], vals[i]}
	}
	return out, s.spendValue(len(out))
}

func isDict(v any) bool {
	switch v.(type) {
	case map[string]any, *jdict:
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

func filterOrd(s *jstate, a []any, _ map[string]any) (any, error) {
	r := []rune(pyStr(a[0]))
	if len(r) != 1 {
		return nil, fmt.Errorf("ord() expected a character, but string of length %d found", len(r))
	}
	return int(r[0]), nil
}

func containsArg(a []any) (any, error) {
	if len(a) < 2 {
		return nil, errors.New("contains needs a value")
	}
	return contains(a[0], a[1])
}

// --- regular expressions (RE2: linear time whatever the pattern) ---

// regexCache keeps a template's compiled patterns; noted literal patterns
// are compiled with the template, and at most maxRegexes others.
type regexCache struct {
	mu sync.Mutex
	m  map[string]*regexp.Regexp
}

const maxRegexes = 16

func (c *regexCache) note(x jexpr) {
	if lit, ok := x.(*jlit); ok {
		if p, ok := lit.v.(string); ok {
			_, _ = c.get(p, false)
			_, _ = c.get(p, true)
		}
	}
}

// get compiles a Python pattern: (?P<name>…) groups and the common escapes
// read the same in RE2; look-arounds and backreferences do not compile.
func (c *regexCache) get(pattern string, ignoreCase bool) (*regexp.Regexp, error) {
	key := pattern
	if ignoreCase {
		key = "(?i)" + pattern
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if re, ok := c.m[key]; ok {
		return re, nil
	}
	re, err := regexp.Compile(key)
	if err != nil {
		return nil, fmt.Errorf("pattern %s: %w", pyQuote(pattern), err)
	}
	if c.m == nil {
		c.m = map[string]*regexp.Regexp{}
	}
	if len(c.m) < maxRegexes {
		c.m[key] = re
	}
	return re, nil
}

func regexOf(s *jstate, a []any, kw map[string]any, caseArg int, anchored bool) (*regexp.Regexp, string, error) {
	str := pyStr(a[0])
	find := pyStr(argOr(a, kw, 1, "find", ""))
	if anchored {
		find = `\A(?:` + find + `)`
	}
	ic := truthy(argOr(a, kw, caseArg, "ignorecase", false))
	if err := s.spendValue(len(str) + len(find)); err != nil {
		return nil, "", err
	}
	re, err := s.program.regex.get(find, ic)
	return re, str, err
}

func regexFind(s *jstate, a []any, kw map[string]any, anchored bool) (any, error) {
	re, str, err := regexOf(s, a, kw, 2, anchored)
	if err != nil {
		return nil, err
	}
	return re.MatchString(str), nil
}

func filterRegexReplace(s *jstate, a []any, kw map[string]any) (any, error) {
	re, str, err := regexOf(s, a, kw, 3, false)
	if err != nil {
		return nil, err
	}
	repl := pyRepl(pyStr(argOr(a, kw, 2, "replace", "")))
	out := re.ReplaceAllString(str, repl)
	return strResult(s, out)
}

// pyRepl turns Python's \1 and \g<name> references into Go's ${1}.
func pyRepl(r string) string {
	var b strings.Builder
	for i := 0; i < len(r); i++ {
		switch {
		case r[i] == '$':
			b.WriteString("$$")
		case r[i] == '\\' && i+1 < len(r) && isDigit(r[i+1]):
			b.WriteString("${" + r[i+1:i+2] + "}")
			i++
		case strings.HasPrefix(r[i:], `\g<`) && strings.IndexByte(r[i:], '>') > 0:
			end := i + strings.IndexByte(r[i:], '>')
			b.WriteString("${" + r[i+3:end] + "}")
			i = end
		default:
			b.WriteByte(r[i])
		}
	}
	return b.String()
}

// findall is Python's re.findall: strings, or tuples of the groups.
func findall(s *jstate, a []any, kw map[string]any) ([]any, error) {
	re, str, err := regexOf(s, a, kw, 2, false)
	if err != nil {
		return nil, err
	}
	ms := re.FindAllStringSubmatch(str, maxJValue/8)
	out := make([]any, 0, len(ms))
	for _, m := range ms {
		switch len(m) {
		case 1:
			out = append(out, m[0])
		case 2:
			out = append(out, m[1])
		default:
			t := make(jtuple, len(m)-1)
			for i, g := range m[1:] {
				t[i] = g
			}
			out = append(out, t)
		}
	}
	return out, s.spendValue(len(out))
}

func filterRegexFindall(s *jstate, a []any, kw map[string]any) (any, error) {
	return findall(s, a, kw)
}

func filterRegexFindallIndex(s *jstate, a []any, kw map[string]any) (any, error) {
	all, err := findall(s, a, kw)
	if err != nil {
		return nil, err
	}
	i, _ := num(argOr(a, kw, 2, "index", 0)).(int)
	if i < 0 {
		i += len(all)
	}
	if i < 0 || i >= len(all) {
		return nil, errors.New("list index out of range")
	}
	return all[i], nil
}

// parseFloatExact rounds f to n decimals (the exact value, half to even)
// as Python's round does.
func parseFloatExact(f float64, n int) (float64, error) {
	return strconv.ParseFloat(strconv.FormatFloat(f, 'f', n, 64), 64)
}
