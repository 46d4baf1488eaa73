package clocktext

import (
	"testing"
	"time"
)

func TestTimesInTheHouseZone(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip("no zone database:", err)
	}
	stored := time.Date(2026, 12, 7, 9, 8, 9, 573393000, time.UTC) // as read back from storage
	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"text in the house zone", Text(stored, tokyo), "2026-12-07 18:08:09 JST"},
		{"text without a zone", Text(stored, nil), "2026-12-07 09:08:09 UTC"},
		{"since, the same day", Since(stored, stored.Add(2*time.Hour), tokyo), "18:08"},
		{"since, another day in the house", Since(stored, stored.Add(6*time.Hour), tokyo), "2026-12-07 18:08:09 JST"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}
