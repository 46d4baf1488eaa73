package mcpserver_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/storage"
)

// TestValidateSaysNextFireThroughMCP: validate's plan says when a time,
// cron or sun trigger would next fire, in the server's zone, and it is
// the next_fire a deploy of the same rule then reports (the scheduler's
// own computation), across the spring-forward gap too: a daily 02:30 in
// Europe/Berlin fires at 03:00 on 2026-03-29, when 02:30 does not exist.
func TestValidateSaysNextFireThroughMCP(t *testing.T) {
	zone, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip("no zone data:", err)
	}
	clk, loc := &shiftedClock{}, engine.DemoLocation
	s := newHTTPStackCfg(t, engine.Config{TimeZone: zone, Location: &loc, LocationSource: engine.LocationDemo, Approval: noApproval, Now: clk.Now}, storage.Options{})
	c := s.client("")
	for i, tc := range []struct{ name, now, trigger, next string }{
		{"spring forward", "2026-03-28T12:00:00+01:00", `{"id": "t", "at": "02:30"}`, "2026-03-29T03:00:00+02:00"},
		{"fall back", "2026-10-24T12:00:00+02:00", `{"id": "t", "at": "02:30"}`, "2026-10-25T02:30:00+02:00"},
		{"weekday cron on a Saturday", "2026-01-17T08:00:00+01:00", `{"id": "t", "cron": "0 30 6 * * 1-5"}`, "2026-01-19T06:30:00+01:00"},
		{"sunset", "2026-01-15T12:00:00+01:00", `{"id": "t", "sun": "sunset", "offset": "15m"}`, "2026-01-15T17"},
		{"state trigger", "2026-01-15T12:00:00+01:00", `{"id": "t", "state": "front_door.contact"}`, ""},
	} {
		clk.set(mustTime(t, tc.now))
		src := `{"name": "next-fire-` + strconv.Itoa(i) + `", "triggers": [` + tc.trigger + `],
		  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "ON"}}]}`
		v := call(t, c, "pilotage_validate", map[string]any{"program": prog(t, src)})
		desc := ""
		for _, st := range v["plan"].(map[string]any)["steps"].([]any) {
			if st := st.(map[string]any); st["id"] == "t" {
				desc, _ = st["description"].(string)
			}
		}
		_, says, found := strings.Cut(desc, "it would next fire at ")
		if tc.next == "" {
			if found {
				t.Errorf("%s: %q names a next fire", tc.name, desc)
			}
			continue
		}
		if !found || !strings.HasPrefix(says, tc.next) {
			t.Errorf("%s: plan says %q, want next fire %s", tc.name, desc, tc.next)
			continue
		}
		out := call(t, c, "pilotage_execute", map[string]any{"program": prog(t, src)})
		nf, _ := out["output"].(map[string]any)["next_fire"].(string)
		if nf == "" || !strings.HasPrefix(says, nf) {
			t.Errorf("%s: validate says %q, the deployed rule's next_fire is %q", tc.name, says, nf)
		}
	}
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return at
}
