package model

import (
	"strings"
	"testing"
)

// TestShownAndSlug: names from the bus lose what hides or reorders text,
// and both names and the ids made from them are bounded.
func TestShownAndSlug(t *testing.T) {
	for _, tc := range []struct{ in, shown, slug string }{
		{"Front door", "Front door", "front_door"},
		{"\u202Ekcol", "kcol", "kcol"},
		{"lamp\x00\uFEFF\u200F", "lamp", "lamp"},
		{"Küche ☀", "Küche ☀", "k_che"},
		{"Door\u3164\u2028", "Door", "door"}, // blank-looking, a line separator
		{strings.Repeat("a", 5000), strings.Repeat("a", maxShown) + "…", strings.Repeat("a", maxSlug)},
	} {
		if got := Shown(tc.in); got != tc.shown {
			t.Errorf("Shown(%q) = %q, want %q", tc.in, got, tc.shown)
		}
		if got := Slug(tc.in); got != tc.slug {
			t.Errorf("Slug(%q) = %q, want %q", tc.in, got, tc.slug)
		}
	}
}
