package shown

import "testing"

// TestFold: names a person cannot tell apart fold to one form; names a
// person can tell apart do not.
func TestFold(t *testing.T) {
	for _, tc := range []struct {
		name, a, b string
		same       bool
	}{
		{"case", "owner-lock", "Owner-Lock", true},
		{"all caps", "owner-lock", "OWNER-LOCK", true},
		{"cyrillic o", "owner-lock", "\u043ewner-l\u043eck", true},
		{"cyrillic capital", "HALL", "\u041d\u0410LL", true},
		{"greek omicron", "porch", "p\u03bfrch", true},
		{"capital I as l", "hall-light", "haII-light", true},
		{"digit one as l", "hall-light", "ha11-light", true},
		{"zero as o", "door", "d00r", true},
		{"fullwidth", "lamp", "\uff4c\uff41\uff4d\uff50", true},
		{"hidden zero-width", "lock", "lo\u200bck", true},
		{"sharp s", "strasse", "stra\u00dfe", true},
		{"different words", "owner-lock", "owner-lamp", false},
		{"dash and underscore", "owner-lock", "owner_lock", true},
		{"dot", "owner-lock", "owner.lock", true},
		{"doubled and trailing separators", "owner-lock", "owner--lock-.", true},
		{"vv as w", "owner-lock", "ovvner-lock", true},
		{"rn as m", "mode", "rnode", true},
		{"separators dropped", "owner-lock", "ownerlock", true},
		{"accent", "cafe", "caf\u00e9", false},
		{"lowercase i and l", "il", "ll", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Fold(tc.a) == Fold(tc.b); got != tc.same {
				t.Errorf("Fold(%q) = %q, Fold(%q) = %q: same %v, want %v", tc.a, Fold(tc.a), tc.b, Fold(tc.b), got, tc.same)
			}
		})
	}
}
