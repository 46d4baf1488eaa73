package web

import (
	"strings"
	"testing"
	"time"
)

// TestClockShowsTheHouseZone: times are shown in the configured zone with
// its abbreviation; the tooltip names the zone; lists ask for relative
// text.
func TestClockShowsTheHouseZone(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	c := newClock(berlin)
	summer, winter := time.Date(2024, 7, 1, 12, 0, 0, 0, time.UTC), time.Date(2024, 1, 15, 22, 30, 5, 0, time.UTC)
	for _, tc := range []struct {
		t    time.Time
		want string
	}{{summer, "2024-07-01 14:00:00 CEST"}, {winter, "2024-01-15 23:30:05 CET"}, {time.Time{}, "—"}} {
		if got := c.when(tc.t); got != tc.want {
			t.Errorf("when(%v) = %q, want %q", tc.t, got, tc.want)
		}
	}
	tag := string(c.tag(summer, true))
	for _, w := range []string{`datetime="2024-07-01T12:00:00Z"`, `title="2024-07-01 14:00:00 CEST (Europe/Berlin)"`, " data-rel>", ">2024-07-01 14:00:00 CEST</time>"} {
		if !strings.Contains(tag, w) {
			t.Errorf("tag %s: missing %s", tag, w)
		}
	}
	if tag := string(c.tag(summer, false)); strings.Contains(tag, "data-rel") {
		t.Errorf("absolute tag asks for relative text: %s", tag)
	}
	if got := newClock(time.UTC).full(summer); got != "2024-07-01 12:00:00 UTC" {
		t.Errorf("UTC tooltip: %q", got)
	}
}
