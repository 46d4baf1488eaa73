package web

import (
	"strings"
	"unicode/utf8"
)

// indentUpTo indents compact JSON the way json.Indent(dst, src, "", "  ")
// does, but stops once limit bytes are written (cut on a character
// boundary): the work is proportional to what is shown, not to the value.
// rest is how many bytes of src were not shown (0: all of it).
func indentUpTo(src []byte, limit int) (text string, rest int) {
	var b strings.Builder
	depth, inStr, esc := 0, false, false
	newline := func() {
		b.WriteByte('\n')
		for range depth {
			b.WriteString("  ")
		}
	}
	i := 0
	for ; i < len(src) && b.Len() < limit; i++ {
		c := src[i]
		if inStr {
			b.WriteByte(c)
			inStr, esc = stringGoesOn(c, esc)
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
		case '"':
			inStr = true
			b.WriteByte(c)
		case '{', '[':
			b.WriteByte(c)
			if j := skipSpace(src, i+1); j < len(src) && (src[j] == '}' || src[j] == ']') {
				b.WriteByte(src[j])
				i = j
				continue
			}
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			b.WriteByte(c)
		case ',':
			b.WriteByte(c)
			newline()
		case ':':
			b.WriteString(": ")
		default:
			b.WriteByte(c)
		}
	}
	out := b.String()
	if len(out) > limit {
		n := limit
		for n > 0 && !utf8.RuneStart(out[n]) {
			n--
		}
		i -= len(out) - n // the cut bytes came from src (indentation only before them)
		out = out[:n]
	}
	return out, max(len(src)-i, 0)
}

func skipSpace(src []byte, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
		i++
	}
	return i
}

// stringGoesOn says, after byte c inside a JSON string (esc: c follows a
// backslash), whether the string goes on and whether the next byte is
// escaped.
func stringGoesOn(c byte, esc bool) (inStr, nextEsc bool) {
	switch {
	case esc:
		return true, false
	case c == '\\':
		return true, true
	}
	return c != '"', false
}
