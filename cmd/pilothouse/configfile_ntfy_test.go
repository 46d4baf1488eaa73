package main

import (
	"slices"
	"testing"
)

// TestConfigNtfyChannel: an ntfy channel's keys load, and misuse is a
// located error.
func TestConfigNtfyChannel(t *testing.T) {
	c, _, err := loadYAML(t, "notify:\n  - id: notify.phone\n    ntfy: https://ntfy.sh/house-1234\n    priority: urgent\n    tags: [house, warning]\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Notify) != 1 || c.Notify[0].Ntfy != "https://ntfy.sh/house-1234" || c.Notify[0].Priority != "urgent" || !slices.Equal(c.Notify[0].Tags, []string{"house", "warning"}) {
		t.Fatalf("notify %+v", c.Notify)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"notify:\n  - {id: notify.x, url: \"https://x\", ntfy: \"https://y\"}\n", "config pilothouse.yaml:2:5: notify[0]: set exactly one of topic, url and ntfy"},
		{"notify:\n  - {id: notify.x, ntfy: ntfy.sh/x}\n", `config pilothouse.yaml:2:26: notify[0].ntfy: want an http(s) URL, got "ntfy.sh/x"`},
		{"notify:\n  - {id: notify.x, ntfy: \"https://y\", priority: loud}\n", `config pilothouse.yaml:2:49: notify[0].priority: want min, low, default, high or urgent, got "loud"`},
		{"notify:\n  - {id: notify.x, topic: t, tags: [a]}\n", "config pilothouse.yaml:2:5: notify[0]: priority and tags are for an ntfy channel"},
	} {
		if _, _, err := loadYAML(t, tc.yaml); err == nil || err.Error() != tc.want {
			t.Errorf("%q:\n got %v\nwant %s", tc.yaml, err, tc.want)
		}
	}
}
