package mcpserver_test

import (
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/storage"
)

// deviceIDs lists the device entries c sees.
func deviceIDs(t *testing.T, c *client.Client) []string {
	t.Helper()
	out, isErr := callTool(t, c, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "list", "kind": "device", "limit": 500})
	if isErr {
		t.Fatalf("list: %v", out)
	}
	var ids []string
	for _, it := range out["items"].([]any) {
		ids = append(ids, it.(map[string]any)["id"].(string))
	}
	sort.Strings(ids)
	return ids
}

// TestDemoDevicesHaveAreas: the demo house announces areas the way a real
// one does (Zigbee2MQTT: area:<x> in the device description; Home
// Assistant discovery: device.suggested_area), so scope.areas works on it.
func TestDemoDevicesHaveAreas(t *testing.T) {
	s := newHTTPStack(t, []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true, Admin: true},
		{Name: "living", TokenHash: engine.HashToken("living-token"), Scope: engine.Scope{Areas: []string{"living"}}},
		{Name: "outside", TokenHash: engine.HashToken("outside-token"), Scope: engine.Scope{Areas: []string{"Garden", "porch"}}},
	}, storage.Options{})
	testutil.Eventually(t, 10*time.Second, "the weather station", func() bool { _, ok := s.devs.Snapshot().Get("outdoor_weather"); return ok })
	for _, tc := range []struct{ token, want string }{
		{"living-token", "living_plug,living_thermostat"},
		{"outside-token", "outdoor_weather,porch_light"},
	} {
		if got := strings.Join(deviceIDs(t, s.client(tc.token)), ","); got != tc.want {
			t.Errorf("%s sees devices %s, want %s", tc.token, got, tc.want)
		}
	}
	owner := s.client("owner-token")
	out, _ := callTool(t, owner, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": "hall_light.set"})
	if !strings.Contains(masked(out), `"area:hall"`) {
		t.Errorf("hall_light.set lacks its device's area tag: %s", masked(out))
	}
}
