package shown

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Cut is s cut to at most max bytes at a whole character, saying its full
// size, and whether it was cut; s as it is when it fits.
func Cut(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	return s[:wholeAt(s, max)] + fmt.Sprintf("… (%d bytes)", len(s)), true
}

// CutFrom cuts b's bytes after from as Cut does, in place.
func CutFrom(b []byte, from, max int) []byte {
	size := len(b) - from
	if size <= max {
		return b
	}
	return fmt.Appendf(b[:from+wholeAt(b[from:], max)], "… (%d bytes)", size)
}

// wholeAt is the largest n <= max at which s starts a character.
func wholeAt[S string | []byte](s S, max int) int {
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}

// Quote is s as messages show a name: a JSON string (every character
// escaped as JSON escapes it, so a control or a quote in a name from the
// bus cannot break the message's own quoting).
func Quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
