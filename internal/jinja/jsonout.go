package jinja

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"unicode/utf8"
)

// JSON output for to_json and tojson, written by the printer so that it
// charges and bounds what it makes as printing does. It writes what
// encoding/json writes (HTML-safe escapes, sorted keys); TestJSONString
// checks it against the standard library.

var (
	errJSONUndef = errors.New("an undefined value has no JSON form")
	errJSONNaN   = errors.New("NaN and Infinity have no JSON form")
)

// json writes v as JSON: compact (to_json), or with ", " and ": " and
// apostrophes escaped too (Jinja's tojson).
func (p *printer) json(v any, spaced bool) {
	if !p.enter() {
		return
	}
	defer p.leave()
	switch x := v.(type) {
	case nil:
		p.write("null")
	case bool:
		p.write(strconv.FormatBool(x))
	case int:
		p.write(strconv.Itoa(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			p.fail(errJSONNaN)
			return
		}
		b, _ := json.Marshal(x)
		p.write(string(b))
	case json.Number:
		p.json(num(x), spaced)
	case string:
		p.jsonString(x, spaced)
	case []any:
		p.jsonList(x, spaced)
	case tuple:
		p.jsonList(x, spaced)
	case map[string]any:
		keys := p.keys(x)
		p.jsonObject(len(keys), func(i int) (string, any) { return keys[i], x[keys[i]] }, spaced)
	case *dict:
		p.jsonDict(x, spaced)
	case undefinedValue:
		p.fail(errJSONUndef)
	default: // datetimes, namespaces: objects without fields, as encoding/json writes them
		p.write("{}")
	}
}

func (p *printer) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

func (p *printer) jsonList(xs []any, spaced bool) {
	p.write("[")
	for i, e := range xs {
		if p.err != nil {
			return
		}
		if i > 0 {
			p.write(sep(",", spaced))
		}
		p.json(e, spaced)
	}
	p.write("]")
}

func sep(s string, spaced bool) string {
	if spaced {
		return s + " "
	}
	return s
}

func (p *printer) jsonObject(n int, item func(int) (string, any), spaced bool) {
	p.write("{")
	for i := 0; i < n && p.err == nil; i++ {
		if i > 0 {
			p.write(sep(",", spaced))
		}
		k, v := item(i)
		p.jsonString(k, spaced)
		p.write(sep(":", spaced))
		p.json(v, spaced)
	}
	p.write("}")
}

// jsonDict writes a template's dict: keys as Python's json writes them,
// sorted, the last of equal keys winning.
func (p *printer) jsonDict(d *dict, spaced bool) {
	if p.s != nil {
		if p.err = p.s.spendItems(2 * len(d.keys)); p.err != nil {
			return
		}
	}
	last := make(map[string]int, len(d.keys))
	for i, k := range d.keys {
		ks, err := jsonKey(k)
		if err != nil {
			p.fail(err)
			return
		}
		last[ks] = i
	}
	keys := sortedKeys(last)
	p.jsonObject(len(keys), func(i int) (string, any) { return keys[i], d.vals[last[keys[i]]] }, spaced)
}

// jsonKey is a dict key as JSON writes it (a string).
func jsonKey(k any) (string, error) {
	switch x := k.(type) {
	case nil:
		return "null", nil
	case bool:
		return strconv.FormatBool(x), nil
	case string:
		return x, nil
	case int:
		return strconv.Itoa(x), nil
	case float64:
		return pyFloat(x), nil
	}
	return "", errors.New("keys must be str, int, float, bool or None, not " + pyType(k))
}

// jsonString writes s as encoding/json does (HTML-safe), apostrophes
// escaped too for tojson; the length is counted before it is written.
func (p *printer) jsonString(s string, apos bool) {
	n := 2
	for i := 0; i < len(s); {
		e, size := jsonEsc(s, i, apos)
		if e != "" {
			n += len(e)
		} else {
			n += size
		}
		i += size
	}
	if !p.grow(n) {
		return
	}
	p.b = append(p.b, '"')
	for i := 0; i < len(s); {
		e, size := jsonEsc(s, i, apos)
		if e != "" {
			p.b = append(p.b, e...)
		} else {
			p.b = append(p.b, s[i:i+size]...)
		}
		i += size
	}
	p.b = append(p.b, '"')
}

// jsonEsc is the escape of the character at s[i] ("" when it stands as it
// is) and its size in bytes.
func jsonEsc(s string, i int, apos bool) (string, int) {
	c := s[i]
	if c < utf8.RuneSelf {
		switch c {
		case '\\', '"':
			return `\` + s[i:i+1], 1
		case '\b':
			return `\b`, 1
		case '\f':
			return `\f`, 1
		case '\n':
			return `\n`, 1
		case '\r':
			return `\r`, 1
		case '\t':
			return `\t`, 1
		case '<', '>', '&':
			return `\u00` + hexDigits[c>>4:c>>4+1] + hexDigits[c&15:c&15+1], 1
		case '\'':
			if apos {
				return `\u0027`, 1
			}
		}
		if c < 0x20 {
			return `\u00` + hexDigits[c>>4:c>>4+1] + hexDigits[c&15:c&15+1], 1
		}
		return "", 1
	}
	r, size := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && size == 1:
		return `\ufffd`, 1
	case r == '\u2028':
		return `\u2028`, size
	case r == '\u2029':
		return `\u2029`, size
	}
	return "", size
}
