package shown

import (
	"strings"
	"testing"
)

// TestCut: a long text is cut at a whole character with its full size
// said; one that fits is as it is; CutFrom leaves what is before from.
func TestCut(t *testing.T) {
	for _, tc := range []struct {
		name, s string
		max     int
		want    string
	}{
		{"fits", "toggle", 6, "toggle"},
		{"ascii", "abcdefgh", 4, "abcd… (8 bytes)"},
		{"inside a character", "ab€€", 4, "ab… (8 bytes)"},
		{"at a character", "ab€€", 5, "ab€… (8 bytes)"},
	} {
		got, cut := Cut(tc.s, tc.max)
		if got != tc.want || cut != (got != tc.s) {
			t.Errorf("%s: Cut = %q, %v; want %q", tc.name, got, cut, tc.want)
		}
		if b := CutFrom([]byte("x: "+tc.s), 3, tc.max); string(b) != "x: "+tc.want {
			t.Errorf("%s: CutFrom = %q", tc.name, b)
		}
	}
	if got, _ := Cut(strings.Repeat("é", 1000), 255); len(got) > 255+20 {
		t.Errorf("cut to %d bytes", len(got))
	}
}
