package zones

import (
	"testing"
	"time"
)

func TestZoneByName(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	tokyo, _ := time.LoadLocation("Asia/Tokyo")
	unnamed := time.FixedZone("", 9*3600) // Tokyo's offsets, no name
	for _, tc := range []struct {
		name       string
		tz         string
		tzSet      bool
		link, file string
		local      *time.Location
		want       string
	}{
		{"TZ", "Europe/Paris", true, "", "", paris, "Europe/Paris"},
		{"TZ with a colon", ":Europe/Paris", true, "", "", paris, "Europe/Paris"},
		{"TZ empty is UTC", "", true, "", "", time.UTC, "UTC"},
		{"the localtime link", "", false, "/usr/share/zoneinfo/Asia/Tokyo", "", unnamed, "Asia/Tokyo"},
		{"relative link", "", false, "../usr/share/zoneinfo/Europe/Paris", "", paris, "Europe/Paris"},
		{"/etc/timezone", "", false, "", "Asia/Tokyo\n", unnamed, "Asia/Tokyo"},
		{"a name that disagrees is not taken", "", false, "/usr/share/zoneinfo/Europe/Paris", "", tokyo, "Asia/Tokyo"},
		{"nothing found keeps local", "", false, "", "", unnamed, ""},
		{"an unknown name keeps local", "Mars/Olympus", true, "", "", unnamed, ""},
	} {
		got := zoneByName(tc.tz, tc.tzSet, tc.link, tc.file, tc.local)
		if got.String() != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got.String(), tc.want)
		}
	}
}
