package shown

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestHiddenAndClean: the characters a person does not see as themselves
// are found (a name the owner types is refused for them) and cleaned out
// (a name from the bus is shown without them); the rest stays.
func TestHiddenAndClean(t *testing.T) {
	for _, tc := range []struct {
		name, in, clean string
		hidden          string // the first hidden character; "" for none
	}{
		{"plain", "Front door", "Front door", ""},
		{"accents and symbols", "Küche ☀", "Küche ☀", ""},
		{"no-break space", "Hall\u00a0light", "Hall\u00a0light", ""},
		{"emoji family", "👨\u200d👩\u200d👧 room", "👨\u200d👩\u200d👧 room", ""},
		{"keycap", "1\ufe0f\u20e3", "1\ufe0f\u20e3", ""},
		{"persian zwnj", "می\u200cخواهم", "می\u200cخواهم", ""},
		{"right-to-left override", "\u202ekcol", "kcol", "\u202e"},
		{"nul bom rlm", "lamp\x00\ufeff\u200f", "lamp", "\x00"},
		{"hangul filler", "door\u3164", "door", "\u3164"},
		{"braille blank", "\u2800", "", "\u2800"},
		{"line separator", "a\u2028b", "ab", "\u2028"},
		{"private use", "x\ue000", "x", "\ue000"},
		{"non-character", "x\ufdd0", "x", "\ufdd0"},
		{"zwj outside emoji", "lo\u200dck", "lock", "\u200d"},
		{"zwnj before a blank letter", "a\u200c\u3164", "a", "\u200c"},
		{"mark without a base", "\u0301a", "a", "\u0301"},
		{"mark after a hidden character", "a\u200b\u0301", "a", "\u200b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, hidden := Hidden(tc.in)
			got := ""
			if hidden {
				got = string(r)
			}
			if got != tc.hidden {
				t.Errorf("Hidden(%q) = %q, want %q", tc.in, got, tc.hidden)
			}
			if got := Clean(tc.in, 128); got != tc.clean {
				t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.clean)
			}
		})
	}
}

func TestCleanBoundsRunes(t *testing.T) {
	got := Clean(strings.Repeat("ä", 500), 128)
	if n := utf8.RuneCountInString(got); n != 129 || !strings.HasSuffix(got, "…") {
		t.Errorf("Clean of 500 runes: %d runes, %q…", n, got[:10])
	}
	if got := Clean(strings.Repeat("😀\u200d", 100), 4); got != "😀\u200d😀…" {
		t.Errorf("Clean cut after a joiner: %q, want the joiner gone", got)
	}
}

func TestBlank(t *testing.T) {
	for in, want := range map[string]bool{"": false, " ": true, "\u3000\u00a0": true, " a ": false} {
		if Blank(in) != want {
			t.Errorf("Blank(%q) = %v", in, !want)
		}
	}
}

// FuzzClean: what Clean keeps is shown as itself, bounded, and a name with
// nothing hidden is kept as it is.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"Front door", "\u202ekcol", "👨\u200d👩", "a\u200b\u0301", "می\u200cخواهم", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Clean(s, 16)
		if r, hidden := Hidden(got); hidden {
			t.Fatalf("Clean(%q) = %q keeps %U", s, got, r)
		}
		if utf8.RuneCountInString(got) > 17 {
			t.Fatalf("Clean(%q) = %q: over the bound", s, got)
		}
		if _, hidden := Hidden(s); !hidden && utf8.ValidString(s) && utf8.RuneCountInString(s) <= 16 && got != s {
			t.Fatalf("Clean(%q) = %q changed a shown name", s, got)
		}
	})
}
