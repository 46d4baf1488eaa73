package mcpserver_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/devices/demo"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// historyHouse is setup with the demo simulator at hand.
func historyHouse(t *testing.T) (*client.Client, *engine.Engine, *demo.Sim, *devices.Catalog) {
	t.Helper()
	h := testhouse.RunHouse(t, testhouse.Options{Inline: true,
		Engine: engine.Config{TimeZone: time.FixedZone("Europe/Somewhere", 3600)}})
	return h.InProcess(), h.Engine, h.Sim, h.Devices
}

// TestLookupGetHistory: "how often did motion trigger" is one get with
// the opt-in history argument; the history rides beside the entry.
func TestLookupGetHistory(t *testing.T) {
	cl, eng, sim, devs := historyHouse(t)
	for _, on := range []bool{true, false, true, false, true, false} {
		if err := sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": on}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("occupancy %v", on), func() bool {
			l, _ := devs.Live("hall_motion.occupancy")
			return l.Value == on
		})
	}
	eng.FlushHistory()
	get := func(args map[string]any) (map[string]any, bool) {
		return callTool(t, cl, "pilotage_lookup", args)
	}
	plain, _ := get(map[string]any{"language": "automation/1", "verb": "get", "id": "hall_motion.occupancy"})
	if plain["history"] != nil {
		t.Fatal("history without asking")
	}
	out, isErr := get(map[string]any{"language": "automation/1", "verb": "get", "id": "hall_motion.occupancy",
		"history": map[string]any{"since": "PT1H", "limit": 3}})
	if isErr {
		t.Fatalf("get with history: %v", out)
	}
	h := out["history"].(map[string]any)
	counts := h["counts"].(map[string]any)
	if out["entry"].(map[string]any)["history"] != nil || counts["true"].(float64) < 3 || h["time_zone"] != "Europe/Somewhere" {
		t.Fatalf("history: %v", h)
	}
	// More changes than the limit: buckets with the last value, not a list.
	if h["changes"] != nil || len(h["bands"].([]any)) == 0 || len(h["bands"].([]any)) > 3 {
		t.Fatalf("bounded history: %v", h)
	}
	full, _ := get(map[string]any{"language": "automation/1", "verb": "get", "id": "hall_motion.occupancy",
		"history": map[string]any{"since": time.Now().Add(-time.Hour).Format(time.RFC3339)}})
	if ch := full["history"].(map[string]any)["changes"].([]any); len(ch) < 6 {
		t.Fatalf("changes: %v", ch)
	}
	for _, bad := range []map[string]any{
		{"id": "hall_light.set", "history": map[string]any{}},
		{"id": "hall_motion.occupancy", "history": map[string]any{"since": "yesterday-ish"}},
		{"id": "hall_motion.occupancy", "history": map[string]any{"limit": 501}},
	} {
		bad["language"], bad["verb"] = "automation/1", "get"
		if res, isErr := get(bad); !isErr || res["error"].(map[string]any)["kind"] != "invalid_request" {
			t.Errorf("%v: %v", bad, res)
		}
	}
}
