package mcpserver

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestLineLimiter: lines at the bound pass unchanged; a longer one is cut
// at the bound and ends in a NUL (it can never parse), its rest skipped,
// however the input is split into reads.
func TestLineLimiter(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"short", "ab\ncd\n", "ab\ncd\n"},
		{"at the bound", "abcd\nef\n", "abcd\nef\n"},
		{"over", "abcdef\nxy\n", "abcd\x00\nxy\n"},
		{"two over", "abcdefgh\nabcde\nz\n", "abcd\x00\nabcd\x00\nz\n"},
		{"over at the end", "ab\nabcdefg", "ab\nabcd\x00\n"},
		{"empty lines", "\n\nabcdefghij\n\n", "\n\nabcd\x00\n\n"},
		{"no newline", "abc", "abc"},
	} {
		for _, split := range []struct {
			name string
			wrap func(io.Reader) io.Reader
		}{{"whole", func(r io.Reader) io.Reader { return r }}, {"bytewise", iotest.OneByteReader}, {"half", iotest.HalfReader}} {
			drops := 0
			l := &lineLimiter{r: split.wrap(strings.NewReader(tc.in)), max: 4, onDrop: func() { drops++ }}
			got, err := io.ReadAll(l)
			if err != nil || string(got) != tc.want {
				t.Errorf("%s, %s: %q (%v), want %q", tc.name, split.name, got, err, tc.want)
			}
			if want := strings.Count(tc.want, "\x00"); drops != want {
				t.Errorf("%s, %s: %d drops reported, want %d", tc.name, split.name, drops, want)
			}
		}
		// A small destination buffer.
		l := &lineLimiter{r: strings.NewReader(tc.in), max: 4}
		got, err := io.ReadAll(iotest.OneByteReader(l))
		if err != nil || string(got) != tc.want {
			t.Errorf("%s, one-byte reads: %q (%v), want %q", tc.name, got, err, tc.want)
		}
	}
}
