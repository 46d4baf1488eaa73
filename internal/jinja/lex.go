package jinja

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The Jinja subset Home Assistant value and command templates use, lexed:
// a template is text, {{ expression }}, {% statement %} and {# comment #},
// each delimiter with optional whitespace control ("{{-", "-%}", …). Home
// Assistant renders with Jinja's defaults (no trim_blocks, no
// lstrip_blocks), so only the markers strip whitespace.

// piece is one piece of a template: text, an expression or a statement
// (its source between the delimiters).
type piece struct {
	kind byte // 't' text, 'e' expression, 's' statement
	src  string
	pos  int // byte offset in the template, for messages
}

// splitTemplate cuts src into pieces, applying whitespace control.
func splitTemplate(src string) ([]piece, error) {
	if len(src) > MaxTemplateLen {
		return nil, fmt.Errorf("template longer than %d bytes", MaxTemplateLen)
	}
	var out []piece
	i := 0
	stripNext := false
	for i < len(src) {
		j := nextOpen(src, i)
		text := src[i:j]
		if stripNext {
			text = strings.TrimLeft(text, " \t\r\n")
		}
		if j == len(src) {
			out = appendText(out, text, i)
			break
		}
		open := src[j : j+2]
		body := j + 2
		if body < len(src) && src[body] == '-' {
			text = strings.TrimRight(text, " \t\r\n")
			body++
		} else if body < len(src) && src[body] == '+' {
			body++
		}
		out = appendText(out, text, i)
		if open == "{%" && isRawStart(src[body:]) {
			raw, next, err := rawBlock(src, body)
			if err != nil {
				return nil, err
			}
			out = appendText(out, raw, body)
			i, stripNext = next, false
			continue
		}
		p, end, strip, err := closePiece(src, open, body)
		if err != nil {
			return nil, err
		}
		if p.kind != 0 {
			out = append(out, p)
		}
		i, stripNext = end, strip
	}
	return trimTrailingNewline(out), nil
}

// trimTrailingNewline drops one newline ending the template, as Jinja does
// (keep_trailing_newline is off).
func trimTrailingNewline(ps []piece) []piece {
	if n := len(ps); n > 0 && ps[n-1].kind == 't' {
		s := strings.TrimSuffix(ps[n-1].src, "\n")
		if strings.HasSuffix(ps[n-1].src, "\r\n") {
			s = strings.TrimSuffix(ps[n-1].src, "\r\n")
		}
		ps[n-1].src = s
	}
	return ps
}

func appendText(out []piece, s string, pos int) []piece {
	if s == "" {
		return out
	}
	return append(out, piece{kind: 't', src: s, pos: pos})
}

// nextOpen finds the next "{{", "{%" or "{#" at or after i (len(src) when
// there is none).
func nextOpen(src string, i int) int {
	for {
		k := strings.IndexByte(src[i:], '{')
		if k < 0 || i+k+1 >= len(src) {
			return len(src)
		}
		switch src[i+k+1] {
		case '{', '%', '#':
			return i + k
		}
		i += k + 1
	}
}

// closePiece reads an expression, statement or comment that starts at body
// (after its opening delimiter and marker) and returns the offset after
// its closing delimiter and whether that delimiter strips what follows.
func closePiece(src, open string, body int) (piece, int, bool, error) {
	closing := map[string]string{"{{": "}}", "{%": "%}", "{#": "#}"}[open]
	var end int
	if open == "{#" {
		k := strings.Index(src[body:], "#}")
		if k < 0 {
			return piece{}, 0, false, errors.New("unclosed comment")
		}
		end = body + k
	} else {
		k, err := findClose(src, body, closing)
		if err != nil {
			return piece{}, 0, false, err
		}
		end = k
	}
	inner, strip := src[body:end], false
	if strings.HasSuffix(inner, "-") {
		inner, strip = inner[:len(inner)-1], true
	} else if strings.HasSuffix(inner, "+") && open != "{{" {
		inner = inner[:len(inner)-1]
	}
	p := piece{pos: body}
	switch open {
	case "{{":
		p.kind, p.src = 'e', inner
	case "{%":
		p.kind, p.src = 's', inner
	}
	return p, end + 2, strip, nil
}

// findClose finds closing ("}}" or "%}") after body, skipping string
// literals (a "}}" inside quotes does not close the expression).
func findClose(src string, i int, closing string) (int, error) {
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\'' || c == '"':
			k, err := skipString(src, i)
			if err != nil {
				return 0, err
			}
			i = k
		case strings.HasPrefix(src[i:], closing):
			return i, nil
		default:
			i++
		}
	}
	return 0, fmt.Errorf("%q not closed", closing)
}

// skipString returns the offset after the string literal starting at i.
func skipString(src string, i int) (int, error) {
	q := src[i]
	for k := i + 1; k < len(src); k++ {
		switch src[k] {
		case '\\':
			k++
		case q:
			return k + 1, nil
		}
	}
	return 0, errors.New("unterminated string literal")
}

func isRawStart(s string) bool {
	f := strings.Fields(strings.TrimRight(strings.SplitN(s, "%}", 2)[0], "-+"))
	return len(f) == 1 && f[0] == "raw"
}

// rawBlock returns the text of {% raw %}…{% endraw %} starting at body.
func rawBlock(src string, body int) (string, int, error) {
	k := strings.Index(src[body:], "%}")
	if k < 0 {
		return "", 0, errors.New("raw block not closed")
	}
	start := body + k + 2
	for i := start; ; {
		j := strings.Index(src[i:], "{%")
		if j < 0 {
			return "", 0, errors.New("raw block without endraw")
		}
		tag := src[i+j+2:]
		e := strings.Index(tag, "%}")
		if e >= 0 && strings.TrimSpace(strings.Trim(tag[:e], "-+ \t\r\n")) == "endraw" {
			return src[start : i+j], i + j + 2 + e + 2, nil
		}
		i += j + 2
	}
}

// token is one token of an expression or statement.
type token struct {
	kind byte // 'n' name, 'i' int, 'f' float, 's' string, 'o' operator, 0 end
	s    string
	num  any // int or float64 for 'i'/'f'
}

var operators = []string{"**", "//", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%", "~", "<", ">", "=", "(", ")", "[", "]", "{", "}", ",", ".", ":", "|"}

// lexExpr tokenises the source of one expression or statement.
func lexExpr(s string) ([]token, error) {
	var out []token
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '_' || isLetter(c):
			j := i + 1
			for j < len(s) && (s[j] == '_' || isLetter(s[j]) || isDigit(s[j])) {
				j++
			}
			out = append(out, token{kind: 'n', s: s[i:j]})
			i = j
		case isDigit(c):
			t, j, err := lexNumber(s, i)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
			i = j
		case c == '\'' || c == '"':
			str, j, err := lexString(s, i)
			if err != nil {
				return nil, err
			}
			out = append(out, token{kind: 's', s: str})
			i = j
		default:
			op := ""
			for _, o := range operators {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				r, _ := utf8.DecodeRuneInString(s[i:])
				return nil, fmt.Errorf("unexpected character %q", r)
			}
			out = append(out, token{kind: 'o', s: op})
			i += len(op)
		}
	}
	return out, nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

func lexNumber(s string, i int) (token, int, error) {
	j := i
	isFloat := false
	for j < len(s) && (isDigit(s[j]) || s[j] == '_') {
		j++
	}
	if j+1 < len(s) && s[j] == '.' && isDigit(s[j+1]) {
		isFloat = true
		j++
		for j < len(s) && (isDigit(s[j]) || s[j] == '_') {
			j++
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			isFloat = true
			for j = k; j < len(s) && isDigit(s[j]); j++ {
			}
		}
	}
	lit := strings.ReplaceAll(s[i:j], "_", "")
	if isFloat {
		f, err := strconv.ParseFloat(lit, 64)
		if err != nil {
			return token{}, 0, fmt.Errorf("bad number %q", s[i:j])
		}
		return token{kind: 'f', s: s[i:j], num: f}, j, nil
	}
	n, err := strconv.ParseInt(lit, 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(lit, 64) // beyond int64: Python keeps it exact; a float is close
		if ferr != nil {
			return token{}, 0, fmt.Errorf("bad number %q", s[i:j])
		}
		return token{kind: 'f', s: s[i:j], num: f}, j, nil
	}
	return token{kind: 'i', s: s[i:j], num: int(n)}, j, nil
}

// lexString reads a Python string literal (single or double quotes,
// backslash escapes) starting at i.
func lexString(s string, i int) (string, int, error) {
	end, err := skipString(s, i)
	if err != nil {
		return "", 0, err
	}
	body := s[i+1 : end-1]
	if strings.IndexByte(body, '\\') < 0 {
		return body, end, nil
	}
	var b strings.Builder
	for k := 0; k < len(body); k++ {
		if body[k] != '\\' || k+1 == len(body) {
			b.WriteByte(body[k])
			continue
		}
		k++
		switch e := body[k]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'u':
			if k+4 < len(body) {
				if r, err := strconv.ParseUint(body[k+1:k+5], 16, 32); err == nil {
					b.WriteRune(rune(r))
					k += 4
					continue
				}
			}
			b.WriteString(`\u`)
		default: // Python keeps unknown escapes (regex patterns rely on it)
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String(), end, nil
}
