package jinja

import (
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeJSON reads a payload as Python's json.loads does for a
// template's value_json: objects (map[string]any), arrays, strings, ints
// or floats by their literal, booleans and None. Keys and strings without
// escapes are substrings of one copy of the payload, so a state message
// costs few allocations.
func decodeJSON(b []byte) (any, error) {
	d := jsonDec{s: string(b)}
	d.space()
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.i != len(d.s) {
		return nil, d.fail("extra data after the JSON value")
	}
	return v, nil
}

type jsonDec struct {
	s string
	i int
}

func (d *jsonDec) fail(msg string) error {
	return errors.New("invalid JSON at offset " + strconv.Itoa(d.i) + ": " + msg)
}

func (d *jsonDec) space() {
	for d.i < len(d.s) {
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *jsonDec) value(depth int) (any, error) {
	if depth > MaxDepth {
		return nil, d.fail("nested too deeply")
	}
	if d.i >= len(d.s) {
		return nil, d.fail("unexpected end")
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth)
	case c == '[':
		return d.array(depth)
	case c == '"':
		return d.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	for _, lit := range [...]struct {
		s string
		v any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if len(d.s)-d.i >= len(lit.s) && d.s[d.i:d.i+len(lit.s)] == lit.s {
			d.i += len(lit.s)
			return lit.v, nil
		}
	}
	return nil, d.fail("unexpected character")
}

func (d *jsonDec) object(depth int) (any, error) {
	d.i++
	m := map[string]any{}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return m, nil
	}
	for {
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != '"' {
			return nil, d.fail("expected a key")
		}
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		d.space()
		if d.i >= len(d.s) || d.s[d.i] != ':' {
			return nil, d.fail("expected ':'")
		}
		d.i++
		d.space()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		m[k] = v
		d.space()
		if d.i < len(d.s) && d.s[d.i] == ',' {
			d.i++
			continue
		}
		if d.i < len(d.s) && d.s[d.i] == '}' {
			d.i++
			return m, nil
		}
		return nil, d.fail("expected ',' or '}'")
	}
}

func (d *jsonDec) array(depth int) (any, error) {
	d.i++
	out := []any{}
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return out, nil
	}
	for {
		d.space()
		v, err := d.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		d.space()
		if d.i < len(d.s) && d.s[d.i] == ',' {
			d.i++
			continue
		}
		if d.i < len(d.s) && d.s[d.i] == ']' {
			d.i++
			return out, nil
		}
		return nil, d.fail("expected ',' or ']'")
	}
}

// str reads a string literal; without escapes it is a substring.
func (d *jsonDec) str() (string, error) {
	start := d.i + 1
	for j := start; j < len(d.s); j++ {
		switch c := d.s[j]; {
		case c == '"':
			d.i = j + 1
			return d.s[start:j], nil
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			d.i = j
			return "", d.fail("control character in string")
		}
	}
	d.i = len(d.s)
	return "", d.fail("unterminated string")
}

func (d *jsonDec) escaped(start int) (string, error) {
	buf := make([]byte, 0, 16)
	for j := start; j < len(d.s); {
		c := d.s[j]
		switch {
		case c == '"':
			d.i = j + 1
			return string(buf), nil
		case c < 0x20:
			d.i = j
			return "", d.fail("control character in string")
		case c != '\\':
			buf = append(buf, c)
			j++
			continue
		}
		if j+1 >= len(d.s) {
			break
		}
		e := d.s[j+1]
		j += 2
		switch e {
		case '"', '\\', '/':
			buf = append(buf, e)
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case 'u':
			r, n, ok := d.unicode(j)
			if !ok {
				d.i = j
				return "", d.fail("bad \\u escape")
			}
			buf = utf8.AppendRune(buf, r)
			j += n
		default:
			d.i = j
			return "", d.fail("bad escape")
		}
	}
	d.i = len(d.s)
	return "", d.fail("unterminated string")
}

// unicode reads the four hex digits after \u at j (and a low surrogate's
// escape after a high one); n is how many bytes it read.
func (d *jsonDec) unicode(j int) (rune, int, bool) {
	hex := func(at int) (rune, bool) {
		if at+4 > len(d.s) {
			return 0, false
		}
		v, err := strconv.ParseUint(d.s[at:at+4], 16, 32)
		return rune(v), err == nil
	}
	r, ok := hex(j)
	if !ok {
		return 0, 0, false
	}
	if utf16.IsSurrogate(r) && j+10 <= len(d.s) && d.s[j+4] == '\\' && d.s[j+5] == 'u' {
		if lo, ok := hex(j + 6); ok {
			if dec := utf16.DecodeRune(r, lo); dec != utf8.RuneError {
				return dec, 10, true
			}
		}
	}
	if utf16.IsSurrogate(r) {
		r = utf8.RuneError
	}
	return r, 4, true
}

// number reads a JSON number: an int when it has no fraction or exponent
// (and fits), else a float.
func (d *jsonDec) number() (any, error) {
	start, isFloat := d.i, false
	if d.s[d.i] == '-' {
		d.i++
	}
	digits := func() int {
		n := 0
		for d.i < len(d.s) && d.s[d.i] >= '0' && d.s[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	intStart := d.i
	if n := digits(); n == 0 || (n > 1 && d.s[intStart] == '0') {
		return nil, d.fail("bad number")
	}
	if d.i < len(d.s) && d.s[d.i] == '.' {
		d.i++
		isFloat = true
		if digits() == 0 {
			return nil, d.fail("bad number")
		}
	}
	if d.i < len(d.s) && (d.s[d.i] == 'e' || d.s[d.i] == 'E') {
		d.i++
		isFloat = true
		if d.i < len(d.s) && (d.s[d.i] == '+' || d.s[d.i] == '-') {
			d.i++
		}
		if digits() == 0 {
			return nil, d.fail("bad number")
		}
	}
	lit := d.s[start:d.i]
	if !isFloat {
		if n, err := strconv.ParseInt(lit, 10, 64); err == nil {
			return int(n), nil
		}
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, d.fail("bad number")
	}
	return f, nil
}
