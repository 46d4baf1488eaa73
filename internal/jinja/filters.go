package jinja

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"unicode"
)

// Filters, tests, functions and methods: Jinja's builtins that value
// templates use and Home Assistant's own (float/int/bool with defaults,
// round with methods, multiply, add, iif, is_defined, to_json/from_json,
// regex_*, bitwise_*). Each is bounded: what it makes is charged and
// capped. args[0] is the filtered value (a method's object).

// jFilters, jTests, jGlobals and jMethods are the closed sets a template may
// name; anything else makes it unsupported when it is compiled.
var (
	jFilters = map[string]jfunc{}
	jTests   = map[string]jfunc{}
	jGlobals = map[string]jfunc{}
	jMethods = map[string]jfunc{}
)

func init() {
	for k, v := range jinjaFilters() {
		jFilters[k] = v
	}
	for k, v := range jinjaFilters2() {
		jFilters[k] = v
	}
	for k, v := range jinjaTests() {
		jTests[k] = v
	}
	for k, v := range jinjaGlobals() {
		jGlobals[k] = v
	}
	for k, v := range jinjaMethods() {
		jMethods[k] = v
	}
	jinjaTimeGlobals(jGlobals)
	jinjaTimeFilters(jFilters)
	jtimeMethods(jMethods)
}

// errNoDefault is Home Assistant's error for float/int/… on a value they
// cannot convert when no default is given.
func errNoDefault(name string, v any) error {
	return fmt.Errorf("%s got invalid input %s and no default was specified", name, pyRepr(v))
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

func jinjaFilters() map[string]jfunc {
	return map[string]jfunc{
		"float":    filterFloat,
		"int":      filterInt,
		"bool":     filterBool,
		"round":    filterRound,
		"multiply": func(s *jstate, a []any, kw map[string]any) (any, error) { return arith(a, kw, "multiply") },
		"add":      func(s *jstate, a []any, kw map[string]any) (any, error) { return arith(a, kw, "add") },
		"abs":      filterAbs,
		"default":  filterDefault,
		"d":        filterDefault,
		"string":   func(s *jstate, a []any, _ map[string]any) (any, error) { return strResult(s, pyStr(a[0])) },
		"lower": func(s *jstate, a []any, _ map[string]any) (any, error) {
			return strResult(s, strings.ToLower(pyStr(a[0])))
		},
		"upper": func(s *jstate, a []any, _ map[string]any) (any, error) {
			return strResult(s, strings.ToUpper(pyStr(a[0])))
		},
		"capitalize": func(s *jstate, a []any, _ map[string]any) (any, error) { return strResult(s, capitalize(pyStr(a[0]))) },
		"title":      func(s *jstate, a []any, _ map[string]any) (any, error) { return strResult(s, title(pyStr(a[0]))) },
		"trim":       filterTrim,
		"replace":    filterReplace,
		"truncate":   filterTruncate,
		"format":     func(s *jstate, a []any, _ map[string]any) (any, error) { return pyFormat(s, pyStr(a[0]), a[1:]) },
		"length":     filterLength,
		"count":      filterLength,
		"first":      func(s *jstate, a []any, _ map[string]any) (any, error) { return nth(s, a[0], 0) },
		"last":       func(s *jstate, a []any, _ map[string]any) (any, error) { return nth(s, a[0], -1) },
		"list":       func(s *jstate, a []any, _ map[string]any) (any, error) { return iterate(s, a[0]) },
		"join":       filterJoin,
		"iif":        func(s *jstate, a []any, kw map[string]any) (any, error) { return iif(a, kw) },
		"is_defined": filterIsDefined,
		"is_number":  func(s *jstate, a []any, _ map[string]any) (any, error) { return isNumeric(a[0]), nil },
		"to_json":    filterToJSON,
		"tojson":     filterJinjaJSON,
		"from_json":  filterFromJSON,
	}
}

func strResult(s *jstate, str string) (any, error) { return str, s.spendValue(len(str)) }

func filterFloat(s *jstate, a []any, kw map[string]any) (any, error) {
	if f, ok := pyFloatOf(a[0]); ok {
		return f, nil
	}
	if d, ok := arg(a, kw, 1, "default"); ok {
		return d, nil
	}
	return nil, errNoDefault("float", a[0])
}

func filterInt(s *jstate, a []any, kw map[string]any) (any, error) {
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
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "1", "true", "yes", "on", "enable":
			return true, true
		case "0", "false", "no", "off", "disable":
			return false, true
		}
	}
	return false, false
}

func filterBool(s *jstate, a []any, kw map[string]any) (any, error) {
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
func filterRound(s *jstate, a []any, kw map[string]any) (any, error) {
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

func filterAbs(s *jstate, a []any, _ map[string]any) (any, error) {
	switch n := num(a[0]).(type) {
	case int:
		return abs(n), nil
	case float64:
		return math.Abs(n), nil
	}
	return nil, fmt.Errorf("bad operand type for abs(): %s", pyType(a[0]))
}

func filterDefault(s *jstate, a []any, kw map[string]any) (any, error) {
	def := argOr(a, kw, 1, "default_value", "")
	boolean := truthy(argOr(a, kw, 2, "boolean", false))
	if _, undef := a[0].(jUndef); undef || (boolean && !truthy(a[0])) {
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

func filterTrim(s *jstate, a []any, kw map[string]any) (any, error) {
	str := pyStr(a[0])
	if c, ok := arg(a, kw, 1, "chars"); ok && c != nil {
		return strings.Trim(str, pyStr(c)), nil
	}
	return strings.TrimSpace(str), nil
}

func filterReplace(s *jstate, a []any, kw map[string]any) (any, error) {
	old, ok1 := arg(a, kw, 1, "old")
	nw, ok2 := arg(a, kw, 2, "new")
	if !ok1 || !ok2 {
		return nil, errors.New("replace needs old and new")
	}
	str, o, n := pyStr(a[0]), pyStr(old), pyStr(nw)
	count := -1
	if c, ok := arg(a, kw, 3, "count"); ok && c != nil {
		count, _ = num(c).(int)
	}
	hits := strings.Count(str, o)
	if count >= 0 && count < hits {
		hits = count
	}
	if err := s.spendValue(len(str) + hits*(len(n)-len(o))); err != nil {
		return nil, err
	}
	return strings.Replace(str, o, n, count), nil
}

// filterTruncate is Jinja's truncate(length=255, killwords=False,
// end='...', leeway=5).
func filterTruncate(s *jstate, a []any, kw map[string]any) (any, error) {
	str := []rune(pyStr(a[0]))
	length, _ := num(argOr(a, kw, 1, "length", 255)).(int)
	killwords := truthy(argOr(a, kw, 2, "killwords", false))
	end := pyStr(argOr(a, kw, 3, "end", "..."))
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

func filterLength(s *jstate, a []any, _ map[string]any) (any, error) {
	switch x := a[0].(type) {
	case string:
		return len([]rune(x)), nil
	case []any:
		return len(x), nil
	case jtuple:
		return len(x), nil
	case map[string]any:
		return len(x), nil
	case *jdict:
		return len(x.keys), nil
	case jUndef:
		return 0, nil
	}
	return nil, fmt.Errorf("object of type %s has no len()", pyType(a[0]))
}

func nth(s *jstate, v any, i int) (any, error) {
	items, err := iterate(s, v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return jUndef{name: "no first item"}, nil
	}
	if i < 0 {
		i += len(items)
	}
	return items[i], nil
}

func filterJoin(s *jstate, a []any, kw map[string]any) (any, error) {
	items, err := iterate(s, a[0])
	if err != nil {
		return nil, err
	}
	sep := pyStr(argOr(a, kw, 1, "d", ""))
	attr, hasAttr := arg(a, kw, 2, "attribute")
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteString(sep)
		}
		if hasAttr {
			if it, err = attrOf(it, attr); err != nil {
				return nil, err
			}
		}
		b.WriteString(pyStr(it))
		if b.Len() > maxJValue {
			return nil, errJSize
		}
	}
	return strResult(s, b.String())
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

func filterIsDefined(s *jstate, a []any, _ map[string]any) (any, error) {
	if u, ok := a[0].(jUndef); ok {
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

// toJSONValue turns a template value into one encoding/json writes.
func toJSONValue(v any, depth int) (any, error) {
	if depth > maxNesting {
		return nil, errors.New("value nested too deeply")
	}
	switch x := v.(type) {
	case jtuple:
		return toJSONValue([]any(x), depth)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = toJSONValue(e, depth+1); err != nil {
				return nil, err
			}
		}
		return out, nil
	case *jdict:
		m := make(map[string]any, len(x.keys))
		for i, k := range x.keys {
			e, err := toJSONValue(x.vals[i], depth+1)
			if err != nil {
				return nil, err
			}
			m[jsonKey(k)] = e
		}
		return m, nil
	case jUndef:
		return nil, errors.New("an undefined value has no JSON form")
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, errors.New("NaN and Infinity have no JSON form")
		}
	}
	return v, nil
}

func jsonKey(k any) string {
	switch x := k.(type) {
	case nil:
		return "null"
	case bool:
		if x {
			return "true"
		}
		return "false"
	}
	return pyStr(k)
}

// filterToJSON is Home Assistant's to_json: compact JSON.
func filterToJSON(s *jstate, a []any, kw map[string]any) (any, error) {
	v, err := toJSONValue(a[0], 0)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return strResult(s, string(b))
}

// filterJinjaJSON is Jinja's tojson: sorted keys, ", " and ": "
// separators, and <, >, & and ' escaped.
func filterJinjaJSON(s *jstate, a []any, kw map[string]any) (any, error) {
	v, err := toJSONValue(a[0], 0)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	writeSpacedJSON(&b, v)
	out := strings.NewReplacer("<", `\u003c`, ">", `\u003e`, "&", `\u0026`, "'", `\u0027`).Replace(b.String())
	return strResult(s, out)
}

func writeSpacedJSON(b *strings.Builder, v any) {
	switch x := v.(type) {
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			writeSpacedJSON(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(", ")
			}
			kb, _ := json.Marshal(k)
			b.Write(kb)
			b.WriteString(": ")
			writeSpacedJSON(b, x[k])
		}
		b.WriteByte('}')
	default:
		e, _ := json.Marshal(v)
		b.Write(e)
	}
}

func filterFromJSON(s *jstate, a []any, kw map[string]any) (any, error) {
	str, ok := a[0].(string)
	if !ok {
		return nil, fmt.Errorf("the JSON object must be str, not %s", pyType(a[0]))
	}
	if err := s.spendValue(len(str)); err != nil {
		return nil, err
	}
	v, err := decodeJSONValue([]byte(str))
	if err != nil {
		if d, ok := arg(a, kw, 1, "default"); ok {
			return d, nil
		}
		return nil, err
	}
	return v, nil
}

func base64Filter(s *jstate, a []any, decode bool) (any, error) {
	str := pyStr(a[0])
	if !decode {
		return strResult(s, base64.StdEncoding.EncodeToString([]byte(str)))
	}
	b, err := base64.StdEncoding.DecodeString(str)
	if err != nil {
		return nil, err
	}
	return strResult(s, string(b))
}
