// Package shown owns which characters a person sees as themselves: the one
// test behind names from the bus (cleaned) and names the owner types
// (refused), and the fold under which names a person cannot tell apart
// are equal (rule names).
package shown

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// blankLooking are letters and symbols that print as nothing.
var blankLooking = []rune{'\u115f', '\u1160', '\u17b4', '\u17b5', '\u2800', '\u3164', '\uffa0'}

// each calls f for every character of rs with whether it prints as a
// visible character or a plain space, until f returns false. It is not a
// control, a text-direction mark (U+202E makes "kcol" read "lock"), a
// zero-width or blank-looking character, a line separator, a private or
// non-character, nor one left unassigned. ZWJ stays between two symbols
// (emoji sequences), ZWNJ between two letters (Persian), a mark after a
// visible base.
func each(rs []rune, f func(i int, ok bool) bool) {
	prevShown := false // rs[i-1] is shown and not a space
	for i, r := range rs {
		ok := asItself(rs, i, prevShown)
		if !f(i, ok) {
			return
		}
		prevShown = ok && !unicode.IsSpace(r)
	}
}

func asItself(rs []rune, i int, prevShown bool) bool {
	r := rs[i]
	hasNext := i < len(rs)-1
	switch {
	case r == '\u200d':
		return prevShown && hasNext && symbol(rs[i-1]) && symbol(rs[i+1])
	case r == '\u200c':
		return prevShown && hasNext && letter(rs[i-1]) && letter(rs[i+1])
	case unicode.In(r, unicode.Mn, unicode.Me):
		return prevShown
	}
	return alone(r)
}

// alone says whether r, whatever its neighbours, prints as itself.
func alone(r rune) bool {
	switch {
	case unicode.IsControl(r), unicode.In(r, unicode.Cf, unicode.Co, unicode.Cs, unicode.Zl, unicode.Zp):
		return false
	case r >= 0xfdd0 && r <= 0xfdef, r&0xfffe == 0xfffe, r == utf8.RuneError, r == '\ufffc':
		return false
	case !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Zs):
		return false
	}
	return !slices.Contains(blankLooking, r)
}

// symbol is a visible symbol (what ZWJ joins in an emoji sequence).
func symbol(r rune) bool { return unicode.Is(unicode.So, r) && alone(r) }

// letter is a visible letter (what ZWNJ keeps apart).
func letter(r rune) bool { return unicode.IsLetter(r) && alone(r) }

// Hidden is the first character of s not shown as itself.
func Hidden(s string) (rune, bool) {
	if plainASCII(s) {
		return 0, false
	}
	rs := []rune(s)
	var first rune
	hidden := false
	each(rs, func(i int, ok bool) bool {
		if !ok {
			first, hidden = rs[i], true
		}
		return ok
	})
	return first, hidden
}

// Blank says whether s is not empty yet shows nothing but blanks.
func Blank(s string) bool {
	return s != "" && strings.TrimFunc(s, unicode.IsSpace) == ""
}

// Clean is s without the characters not shown as themselves, at most max
// runes (a longer one ends with "…").
func Clean(s string, max int) string {
	if len(s) <= max && plainASCII(s) {
		return s
	}
	rs := []rune(s)
	var b strings.Builder
	n := 0
	each(rs, func(i int, ok bool) bool {
		if !ok {
			return true
		}
		if n == max {
			// A joiner joins nothing once the text is cut after it.
			out := strings.TrimRight(b.String(), "\u200c\u200d")
			b.Reset()
			b.WriteString(out)
			b.WriteRune('…')
			return false
		}
		b.WriteRune(rs[i])
		n++
		return true
	})
	return b.String()
}

// plainASCII says whether s is printable ASCII only (shown as itself).
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
