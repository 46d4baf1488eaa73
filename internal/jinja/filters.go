package jinja

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Filters, tests, functions and methods: Jinja's builtins that value
// templates use and Home Assistant's own (float/int/bool with defaults,
// round with methods, multiply, add, iif, is_defined, to_json/from_json,
// regex_*, bitwise_*). Each is bounded: what it makes is charged and
// capped. args[0] is the filtered value (a method's object).

// filters, tests, globals and methods are the closed sets a template may
// name; anything else makes it unsupported when it is compiled.
var (
	filters = map[string]builtin{}
	tests   = map[string]builtin{}
	globals = map[string]builtin{}
	methods = map[string]builtin{}
)

func init() {
	for k, v := range filterTable() {
		filters[k] = v
	}
	for k, v := range listFilterTable() {
		filters[k] = v
	}
	for k, v := range testTable() {
		tests[k] = v
	}
	for k, v := range globalTable() {
		globals[k] = v
	}
	for k, v := range methodTable() {
		methods[k] = v
	}
	timeGlobals(globals)
	timeFilters(filters)
	timeMethods(methods)
}

// errNoDefault is Home Assistant's error for float/int/… on a value they
// cannot convert when no default is given.
func errNoDefault(name string, v any) error {
	return fmt.Errorf("%s got invalid input %s and no default was specified", name, brief(v))
}

// arg returns positional argument i (after the filtered value) or the
// keyword name.
func arg(args []any, kw map[string]any, i int, name string) (any, bool) {
	if i < len(args) {
		return args[i], true
	}
	v, ok := kw[name]
	return v, ok
}

func argOr(args []any, kw map[string]any, i int, name string, def any) any {
	if v, ok := arg(args, kw, i, name); ok {
		return v
	}
	return def
}

func filterTable() map[string]builtin {
	return map[string]builtin{
		"float":      filterFloat,
		"int":        filterInt,
		"bool":       filterBool,
		"round":      filterRound,
		"multiply":   func(s *state, a []any, kw map[string]any) (any, error) { return arith(a, kw, "multiply") },
		"add":        func(s *state, a []any, kw map[string]any) (any, error) { return arith(a, kw, "add") },
		"abs":        filterAbs,
		"default":    filterDefault,
		"d":          filterDefault,
		"string":     strFilter(func(x string) string { return x }),
		"lower":      strFilter(strings.ToLower),
		"upper":      strFilter(strings.ToUpper),
		"capitalize": strFilter(capitalize),
		"title":      strFilter(title),
		"trim":       filterTrim,
		"replace":    filterReplace,
		"truncate":   filterTruncate,
		"format": func(s *state, a []any, _ map[string]any) (any, error) {
			f, err := s.str(a[0])
			if err != nil {
				return nil, err
			}
			return pyFormat(s, f, a[1:])
		},
		"length":     filterLength,
		"count":      filterLength,
		"first":      func(s *state, a []any, _ map[string]any) (any, error) { return nth(s, a[0], 0) },
		"last":       func(s *state, a []any, _ map[string]any) (any, error) { return nth(s, a[0], -1) },
		"list":       func(s *state, a []any, _ map[string]any) (any, error) { return iterate(s, a[0]) },
		"join":       filterJoin,
		"iif":        func(s *state, a []any, kw map[string]any) (any, error) { return iif(a, kw) },
		"is_defined": filterIsDefined,
		"is_number":  func(s *state, a []any, _ map[string]any) (any, error) { return isNumeric(a[0]), nil },
		"to_json":    filterToJSON,
		"tojson":     filterJinjaJSON,
		"from_json":  filterFromJSON,
	}
}

// strFilter is a filter that maps the printed value: the conversion is
// charged before it runs (case mappings may make up to 3 bytes of 2, and
// a rune slice takes 4 bytes a byte), and its result is bounded.
func strFilter(f func(string) string) builtin {
	return func(s *state, a []any, _ map[string]any) (any, error) {
		str, err := s.str(a[0])
		if err != nil {
			return nil, err
		}
		if err := s.spend(4*len(str)/BytesPerUnit + 1); err != nil {
			return nil, err
		}
		return sized(f(str))
	}
}

// sized bounds a string made by an operation charged in advance.
func sized(str string) (any, error) {
	if len(str) > MaxValue {
		return nil, ErrSize
	}
	return str, nil
}

// strArg is an argument printed as Python's str() does.
func strArg(s *state, a []any, kw map[string]any, i int, name string, def any) (string, error) {
	return s.str(argOr(a, kw, i, name, def))
}

func filterFloat(s *state, a []any, kw map[string]any) (any, error) {
	if f, ok := pyFloatOf(a[0]); ok {
		return f, nil
	}
	if d, ok := arg(a, kw, 1, "default"); ok {
		return d, nil
	}
	return nil, errNoDefault("float", a[0])
}

func filterInt(s *state, a []any, kw map[string]any) (any, error) {
	base := 10
	if b, ok := arg(a, kw, 2, "base"); ok {
		bi, isInt := num(b).(int)
		if !isInt || bi < 2 || bi > 36 {
			return nil, errors.New("int() base must be >= 2 and <= 36")
		}
		base = bi
	}
	if n, ok := pyInt(a[0], base); ok {
		return n, nil
	}
	if str, ok := a[0].(string); ok && base == 10 {
		if f, ok := pyFloatOf(str); ok {
			if n, ok := pyInt(f, 10); ok {
				return n, nil
			}
		}
	}
	if d, ok := arg(a, kw, 1, "default"); ok {
		return d, nil
	}
	return nil, errNoDefault("int", a[0])
}

// pyBool is Home Assistant's boolean(): true/false, 1/0, and the strings
// true/false, yes/no, on/off, enable/disable, 1/0.
func pyBool(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case int, float64, json.Number:
		f, _ := toF(x)
		if f == 0 || f == 1 {
			return f == 1, true
		}
	case string:
		if len(x) > maxNumberLen {
			return false, false
		}
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "1", "true", "yes", "on", "enable":
			return true, true
		case "0", "false", "no", "off", "disable":
			return false, true
		}
	}
	return false, false
}

func filterBool(s *state, a []any, kw map[string]any) (any, error) {
	if b, ok := pyBool(a[0]); ok {
		return b, nil
	}
	if d, ok := arg(a, kw, 1, "default"); ok {
		return d, nil
	}
	return nil, errNoDefault("bool", a[0])
}

// filterRound is Home Assistant's round(precision, method, default): an
// int when precision is 0.
func filterRound(s *state, a []any, kw map[string]any) (any, error) {
	f, ok := pyFloatOf(a[0])
	if !ok {
		if d, has := arg(a, kw, 3, "default"); has {
			return d, nil
		}
		return nil, errNoDefault("round", a[0])
	}
	prec, ok := num(argOr(a, kw, 1, "precision", 0)).(int)
	if !ok || prec < -20 || prec > 20 {
		return nil, errors.New("precision must be an integer")
	}
	mult := math.Pow(10, float64(prec))
	switch argOr(a, kw, 2, "method", "common") {
	case "ceil":
		f = math.Ceil(f*mult) / mult
	case "floor":
		f = math.Floor(f*mult) / mult
	case "half":
		f = math.RoundToEven(f*2) / 2
	default:
		f = pyRound(f, prec)
	}
	if prec == 0 {
		if n, ok := pyInt(f, 10); ok {
			return n, nil
		}
	}
	return f, nil
}

// pyRound is Python's round(x, n): the exact binary value rounded half to
// even, as a decimal.
func pyRound(f float64, n int) float64 {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return f
	}
	if n <= 0 {
		p := math.Pow(10, float64(-n))
		return math.RoundToEven(f/p) * p
	}
	r, err := parseFloatExact(f, n)
	if err != nil {
		return f
	}
	return r
}

func arith(a []any, kw map[string]any, name string) (any, error) {
	f, ok := pyFloatOf(a[0])
	amount, ok2 := arg(a, kw, 1, "amount")
	af, ok3 := toF(amount)
	if ok && ok2 && ok3 {
		if name == "add" {
			return f + af, nil
		}
		return f * af, nil
	}
	if d, has := arg(a, kw, 2, "default"); has {
		return d, nil
	}
	return nil, errNoDefault(name, a[0])
}

func filterAbs(s *state, a []any, _ map[string]any) (any, error) {
	switch n := num(a[0]).(type) {
	case int:
		return abs(n), nil
	case float64:
		return math.Abs(n), nil
	}
	return nil, fmt.Errorf("bad operand type for abs(): %s", pyType(a[0]))
}

func filterDefault(s *state, a []any, kw map[string]any) (any, error) {
	def := argOr(a, kw, 1, "default_value", "")
	boolean := truthy(argOr(a, kw, 2, "boolean", false))
	if _, undef := a[0].(undefinedValue); undef || (boolean && !truthy(a[0])) {
		return def, nil
	}
	return a[0], nil
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	r := []rune(strings.ToLower(s))
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

func title(s string) string {
	r := []rune(strings.ToLower(s))
	start := true
	for i, c := range r {
		if unicode.IsLetter(c) || unicode.IsDigit(c) || c == '\'' {
			if start {
				r[i] = unicode.ToUpper(c)
			}
			start = false
		} else {
			start = true
		}
	}
	return string(r)
}

func filterTrim(s *state, a []any, kw map[string]any) (any, error) {
	str, err := s.str(a[0])
	if err != nil {
		return nil, err
	}
	if c, ok := arg(a, kw, 1, "chars"); ok && c != nil {
		cs, err := s.str(c)
		if err != nil {
			return nil, err
		}
		if err := s.spend((len(str)+len(cs))/BytesPerUnit + 1); err != nil {
			return nil, err
		}
		return strings.Trim(str, cs), nil
	}
	if err := s.spend(len(str)/BytesPerUnit + 1); err != nil {
		return nil, err
	}
	return strings.TrimSpace(str), nil
}

func filterReplace(s *state, a []any, kw map[string]any) (any, error) {
	old, ok1 := arg(a, kw, 1, "old")
	nw, ok2 := arg(a, kw, 2, "new")
	if !ok1 || !ok2 {
		return nil, errors.New("replace needs old and new")
	}
	str, err := s.str(a[0])
	if err != nil {
		return nil, err
	}
	o, err := s.str(old)
	if err != nil {
		return nil, err
	}
	n, err := s.str(nw)
	if err != nil {
		return nil, err
	}
	if err := s.spendBytes(len(str)); err != nil { // counting scans it
		return nil, err
	}
	count := -1
	if c, ok := arg(a, kw, 3, "count"); ok && c != nil {
		count, _ = num(c).(int)
	}
	hits := strings.Count(str, o)
	if count >= 0 && count < hits {
		hits = count
	}
	if o == "" {
		hits = min(hits, MaxValue+1) // strings.Count counts len+1 empty matches
	}
	if err := s.spendBytes(len(str) + hits*(len(n)-len(o))); err != nil {
		return nil, err
	}
	return strings.Replace(str, o, n, count), nil
}

// filterTruncate is Jinja's truncate(length=255, killwords=False,
// end='...', leeway=5).
func filterTruncate(s *state, a []any, kw map[string]any) (any, error) {
	text, err := s.str(a[0])
	if err != nil {
		return nil, err
	}
	end, err := strArg(s, a, kw, 3, "end", "...")
	if err != nil {
		return nil, err
	}
	if err := s.spend(4*(len(text)+len(end))/BytesPerUnit + 1); err != nil {
		return nil, err
	}
	str := []rune(text)
	length, _ := num(argOr(a, kw, 1, "length", 255)).(int)
	killwords := truthy(argOr(a, kw, 2, "killwords", false))
	leeway, _ := num(argOr(a, kw, 4, "leeway", 5)).(int)
	if length < len([]rune(end)) || leeway < 0 {
		return nil, errors.New("truncate: length must be at least the length of end")
	}
	if len(str) <= length+leeway {
		return string(str), nil
	}
	cut := string(str[:length-len([]rune(end))])
	if !killwords {
		if i := strings.LastIndexByte(cut, ' '); i >= 0 {
			cut = cut[:i]
		}
	}
	return cut + end, nil
}

func filterLength(s *state, a []any, _ map[string]any) (any, error) {
	switch x := a[0].(type) {
	case string:
		if err := s.spendBytes(len(x)); err != nil {
			return nil, err
		}
		return utf8.RuneCountInString(x), nil
	case []any:
		return len(x), nil
	case tuple:
		return len(x), nil
	case map[string]any:
		return len(x), nil
	case *dict:
		return len(x.keys), nil
	case undefinedValue:
		return 0, nil
	}
	return nil, fmt.Errorf("object of type %s has no len()", pyType(a[0]))
}

func nth(s *state, v any, i int) (any, error) {
	items, err := iterate(s, v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return undefinedValue{name: "no first item"}, nil
	}
	if i < 0 {
		i += len(items)
	}
	return items[i], nil
}

func filterJoin(s *state, a []any, kw map[string]any) (any, error) {
	items, err := iterate(s, a[0])
	if err != nil {
		return nil, err
	}
	sep, err := strArg(s, a, kw, 1, "d", "")
	if err != nil {
		return nil, err
	}
	attr, hasAttr := arg(a, kw, 2, "attribute")
	var b strings.Builder
	for i, it := range items {
		if hasAttr {
			if it, err = attrOf(s, it, attr); err != nil {
				return nil, err
			}
		}
		str, err := s.str(it)
		if err != nil {
			return nil, err
		}
		n := len(str)
		if i > 0 {
			n += len(sep)
		}
		if b.Len()+n > MaxValue {
			return nil, ErrSize
		}
		if err := s.spendBytes(n); err != nil {
			return nil, err
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(str)
	}
	return b.String(), nil
}

func iif(a []any, kw map[string]any) (any, error) {
	ifTrue := argOr(a, kw, 1, "if_true", true)
	ifFalse := argOr(a, kw, 2, "if_false", false)
	if ifNone, ok := arg(a, kw, 3, "if_none"); ok && a[0] == nil {
		return ifNone, nil
	}
	if truthy(a[0]) {
		return ifTrue, nil
	}
	return ifFalse, nil
}

func filterIsDefined(s *state, a []any, _ map[string]any) (any, error) {
	if u, ok := a[0].(undefinedValue); ok {
		return nil, fmt.Errorf("%s is undefined", undefName(u))
	}
	return a[0], nil
}

func isNumeric(v any) bool {
	switch v.(type) {
	case bool:
		return false
	case string:
		f, ok := pyFloatOf(v)
		return ok && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	f, ok := toF(v)
	return ok && !math.IsNaN(f) && !math.IsInf(f, 0)
}

// filterToJSON is Home Assistant's to_json: compact JSON.
func filterToJSON(s *state, a []any, kw map[string]any) (any, error) {
	p := printer{limit: MaxValue, s: s}
	p.json(a[0], false)
	return string(p.b), p.err
}

// filterJinjaJSON is Jinja's tojson: sorted keys, ", " and ": "
// separators, and <, >, & and ' escaped.
func filterJinjaJSON(s *state, a []any, kw map[string]any) (any, error) {
	p := printer{limit: MaxValue, s: s}
	p.json(a[0], true)
	return string(p.b), p.err
}

func filterFromJSON(s *state, a []any, kw map[string]any) (any, error) {
	str, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("the JSON object must be str, not %s", pyType(a[0]))
	}
	if err := s.spend(len(str)/2 + 1); err != nil { // decoded values take up to 32 bytes a byte of text
		return nil, err
	}
	v, err := decodeJSON([]byte(str))
	if err != nil {
		if d, ok := arg(a, kw, 1, "default"); ok {
			return d, nil
		}
		return nil, err
	}
	return v, nil
}

func base64Filter(s *state, a []any, decode bool) (any, error) {
	str, err := s.str(a[0])
	if err != nil {
		return nil, err
	}
	if !decode {
		if err := s.spendBytes(base64.StdEncoding.EncodedLen(len(str))); err != nil {
			return nil, err
		}
		return base64.StdEncoding.EncodeToString([]byte(str)), nil
	}
	if err := s.spendBytes(2 * len(str)); err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(str)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}
