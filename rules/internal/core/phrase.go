package core

import (
	"strconv"
	"strings"
)

// Plural is n with the noun in the number n needs: "1 trigger",
// "2 triggers", "0 conditions". many "" adds an s to one.
func Plural(n int, one, many string) string {
	if many == "" {
		many = one + "s"
	}
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// JoinList joins items the way a sentence lists them: "a", "a and b",
// "a, b and c" (conj "and" or "or"; no serial comma).
func JoinList(items []string, conj string) string {
	switch len(items) {
	case 0:
		return ""
	case 1:
		return items[0]
	}
	last := len(items) - 1
	return strings.Join(items[:last], ", ") + " " + conj + " " + items[last]
}

func AvailablePhrase(v any) string {
	if b, ok := v.(bool); ok && !b {
		return "went offline"
	}
	return "came back online"
}
