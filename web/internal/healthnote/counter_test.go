package healthnote

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestHealthNotesAreWhole: every note says its value, and one that needs
// a look says what to do.
func TestHealthNotesAreWhole(t *testing.T) {
	seen := map[string]bool{}
	for i, n := range Notes {
		if seen[n.Path] {
			t.Errorf("%s: twice in the table", n.Path)
		}
		seen[n.Path] = true
		if got := (Counter{Path: n.Path, Value: "5", Note: &Notes[i], key: "k"}).Text(); !containsAll(got, "5") || containsAll(got, "%!") {
			t.Errorf("%s: sentence %q", n.Path, got)
		}
		if (n.Kind == Trouble) != (n.Next != "") {
			t.Errorf("%s: kind %d with next step %q", n.Path, n.Kind, n.Next)
		}
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestHealthNoteSingular: a count of one reads as one.
func TestHealthNoteSingular(t *testing.T) {
	for path, want := range map[string]string{
		"devices.refused.oversized_messages": "1 MQTT message was refused unread as too large",
		"logbook.dropped":                    "1 logbook entry was lost: the queue",
		"logbook.dropped_bus":                "1 of the lost logbook entries was the devices'",
		"history.queued":                     "1 state change waits to be written",
		"http.connections":                   "1 HTTP connection is open now.",
	} {
		i, _ := Index(path)
		if got := (Counter{Path: path, Value: "1", Note: &Notes[i]}).Text(); !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q, want %q…", path, got, want)
		}
	}
}

// TestHealthDurationsAreWhole: the health page's waits read in whole
// milliseconds, as /healthz's microseconds mean nothing to a person.
func TestHealthDurationsAreWhole(t *testing.T) {
	for _, tc := range []struct{ path, value, want string }{
		{"load.firings.oldest_wait_ms", "12047.573", "The oldest waiting firing has waited 12048 ms."},
		{"load.mqtt.waited_ms", "0.2", "MQTT messages waited under 1 ms in all for the rule engine."},
		{"load.mqtt.backpressured", "3", "3 MQTT messages waited for the rule engine to catch up (the broker held them back)."},
	} {
		cs := Read(map[string]any{"load": nestedAt(strings.TrimPrefix(tc.path, "load."), json.Number(tc.value))})
		if len(cs) != 1 || cs[0].Text() != tc.want {
			t.Errorf("%s = %s: %+v, want %q", tc.path, tc.value, cs, tc.want)
		}
	}
}

// nestedAt is v at the dotted path in nested maps.
func nestedAt(path string, v any) map[string]any {
	head, rest, more := strings.Cut(path, ".")
	if !more {
		return map[string]any{head: v}
	}
	return map[string]any{head: nestedAt(rest, v)}
}
