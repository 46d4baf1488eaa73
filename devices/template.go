package devices

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// tmpl is a compiled Home Assistant value template. Only the simple path
// forms are supported: {{ value }}, {{ value_json.a.b }}, {{ value_json['a'] }},
// {{ value_json[0] }}, optionally piped through float, int, round(n), string,
// lower, upper or trim. Everything else is unsupported: the entity's state is
// then marked unsupported instead of guessed.
type tmpl struct {
	json        bool
	path        []any // string keys and int indexes
	filters     []tmplFilter
	unsupported string
}

type tmplFilter struct {
	name string
	arg  int
}

var errNoValue = errors.New("template path not present in payload")

func compileTemplate(src string) *tmpl {
	s := strings.TrimSpace(src)
	if s == "" {
		return nil
	}
	bad := func(why string) *tmpl { return &tmpl{unsupported: why + ": " + truncate(src, 60)} }
	if !strings.HasPrefix(s, "{{") || !strings.HasSuffix(s, "}}") {
		return bad("template is not a single {{ expression }}")
	}
	inner := strings.TrimSpace(s[2 : len(s)-2])
	if strings.Contains(inner, "{{") || strings.Contains(inner, "}}") || strings.Contains(inner, "{%") {
		return bad("template has more than one expression")
	}
	parts := strings.Split(inner, "|")
	t := &tmpl{}
	expr := strings.TrimSpace(parts[0])
	switch {
	case expr == "value":
	case strings.HasPrefix(expr, "value_json"):
		t.json = true
		path, ok := parsePath(expr[len("value_json"):])
		if !ok {
			return bad("unsupported template expression")
		}
		t.path = path
	default:
		return bad("unsupported template expression")
	}
	for _, f := range parts[1:] {
		tf, ok := parseFilter(strings.TrimSpace(f))
		if !ok {
			return bad("unsupported template filter")
		}
		t.filters = append(t.filters, tf)
	}
	return t
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*`)

func parsePath(s string) ([]any, bool) {
	var out []any
	for {
		s = strings.TrimSpace(s)
		if s == "" {
			return out, true
		}
		switch s[0] {
		case '.':
			id := identRe.FindString(s[1:])
			if id == "" {
				return nil, false
			}
			out = append(out, id)
			s = s[1+len(id):]
		case '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, false
			}
			in := strings.TrimSpace(s[1:end])
			s = s[end+1:]
			if len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0] {
				out = append(out, in[1:len(in)-1])
				continue
			}
			n, err := strconv.Atoi(in)
			if err != nil {
				return nil, false
			}
			out = append(out, n)
		default:
			return nil, false
		}
	}
}

var roundRe = regexp.MustCompile(`^round\(\s*(\d+)\s*\)$`)

func parseFilter(f string) (tmplFilter, bool) {
	switch f {
	case "float", "int", "string", "lower", "upper", "trim":
		return tmplFilter{name: f}, true
	case "round", "round()":
		return tmplFilter{name: "round"}, true
	}
	if m := roundRe.FindStringSubmatch(f); m != nil {
		n, _ := strconv.Atoi(m[1])
		return tmplFilter{name: "round", arg: n}, true
	}
	return tmplFilter{}, false
}

// render applies the template to a payload. A nil template is the identity
// (the payload text). The result is a string, float64, bool, nil, or a
// decoded JSON object/array.
func (t *tmpl) render(payload []byte) (any, error) {
	if t == nil {
		return string(payload), nil
	}
	if t.unsupported != "" {
		return nil, errors.New(t.unsupported)
	}
	var v any = string(payload)
	if t.json {
		var doc any
		if err := json.Unmarshal(payload, &doc); err != nil {
			return nil, fmt.Errorf("value_json: %w", err)
		}
		for _, seg := range t.path {
			switch k := seg.(type) {
			case string:
				m, ok := doc.(map[string]any)
				if !ok {
					return nil, errNoValue
				}
				if doc, ok = m[k]; !ok {
					return nil, errNoValue
				}
			case int:
				a, ok := doc.([]any)
				if !ok || k < 0 || k >= len(a) {
					return nil, errNoValue
				}
				doc = a[k]
			}
		}
		v = doc
	}
	var err error
	for _, f := range t.filters {
		if v, err = applyFilter(f, v); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func applyFilter(f tmplFilter, v any) (any, error) {
	switch f.name {
	case "float", "int", "round":
		n, ok := toFloat(v)
		if !ok {
			return nil, fmt.Errorf("%s: %v is not a number", f.name, v)
		}
		switch f.name {
		case "int":
			return math.Trunc(n), nil
		case "round":
			p := math.Pow(10, float64(f.arg))
			return math.Round(n*p) / p, nil
		}
		return n, nil
	case "string":
		return stringify(v), nil
	case "lower":
		return strings.ToLower(stringify(v)), nil
	case "upper":
		return strings.ToUpper(stringify(v)), nil
	case "trim":
		return strings.TrimSpace(stringify(v)), nil
	}
	return v, nil
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

// stringify renders a value the way a payload comparison needs it.
func stringify(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		if x {
			return "true"
		}
		return "false"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

var cmdTmplRe = regexp.MustCompile(`\{\{\s*(value|position|tilt_position|brightness|color_temp|option)\s*\}\}`)

// renderCommand renders a command template of the simple kind: one or more
// {{ value }} (or {{ position }}, …) substitutions in literal text. It
// reports false for anything else.
func renderCommand(src string, v any) (string, bool) {
	if src == "" {
		return stringify(v), true
	}
	out := cmdTmplRe.ReplaceAllString(src, "\x00")
	if strings.Contains(out, "{{") || strings.Contains(out, "{%") {
		return "", false
	}
	return strings.ReplaceAll(out, "\x00", stringify(v)), true
}

func commandTemplateOK(src string) bool {
	_, ok := renderCommand(src, 0.0)
	return ok
}
