package sched

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/pilotage"
)

// describeChange builds its text in one buffer; it must read as the
// Sprintf it replaced (JSON values, fmt.Sprint for what JSON cannot carry).
func TestDescribeChangeText(t *testing.T) {
	old := func(v any) string {
		b, err := pilotage.AppendJSON(nil, v)
		if err != nil {
			return fmt.Sprint(v)
		}
		return string(b)
	}
	const entity = "hall_motion.occupancy"
	for _, c := range []struct{ prev, cur any }{
		{false, true}, {nil, 21.5}, {"off", "on"}, {1e21, math.NaN()},
		{map[string]any{"a": []any{1, "<b>"}}, strings.Repeat("x", 200)},
		{make(chan int), func() {}},
	} {
		got := describeChange(entity, devices.Change{Kind: devices.ChangeState, Prev: c.prev, Value: c.cur}, false)
		if want := fmt.Sprintf("%s changed from %s to %s", entity, old(c.prev), old(c.cur)); got != want {
			t.Errorf("state %v -> %v:\n got %s\nwant %s", c.prev, c.cur, got, want)
		}
		got = describeChange(entity, devices.Change{Kind: devices.ChangeEvent, Value: c.cur}, false)
		if want := fmt.Sprintf("%s fired %s", entity, old(c.cur)); got != want {
			t.Errorf("event %v:\n got %s\nwant %s", c.cur, got, want)
		}
	}
	// A value from the bus is cut in the reason, at a whole character,
	// with its size: every firing's record keeps the reason.
	big := strings.Repeat("é", 100_000)
	got := describeChange(entity, devices.Change{Kind: devices.ChangeState, Prev: big, Value: "off"}, false)
	if !strings.HasPrefix(got, entity+` changed from "éé`) || !strings.Contains(got, "… (200002 bytes) to \"off\"") ||
		len(got) > 2*maxShownValue+100 || !utf8.ValidString(got) {
		t.Errorf("a 200 KB value's reason: %d bytes, %.80q … %q", len(got), got, got[max(0, len(got)-60):])
	}
	if !raceEnabled {
		ch := devices.Change{Kind: devices.ChangeState, Prev: 20.5, Value: 21.0}
		// The buffer and the string copied out of it (no unsafe outside
		// rules but storage's envelope argument: issue 15).
		if n := testing.AllocsPerRun(100, func() { describeChange(entity, ch, false) }); n > 2 {
			t.Errorf("describeChange allocates %.0f objects, want 2", n)
		}
	}
}
