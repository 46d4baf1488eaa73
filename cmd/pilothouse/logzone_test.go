package main

import (
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestLogTimesInTheHouseZone: the log's times are written in the house's
// zone, as the web UI shows them (a new user with --tz Europe/Berlin read
// "Z" times in the log beside CET times in the UI).
func TestLogTimesInTheHouseZone(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no zone database:", err)
	}
	for _, json := range []bool{false, true} {
		var buf testutil.LockedBuffer
		newLogger(&buf, "info", json, berlin).Info("started")
		_, off := time.Now().In(berlin).Zone()
		want := time.Now().In(berlin).Format("-07:00")
		if off == 0 || !strings.Contains(buf.String(), want) {
			t.Errorf("json %v: %q, want a time at %s", json, buf.String(), want)
		}
	}
}
