package devices_test

import (
	"context"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testbus"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// TestZ2MAvailabilityUntilReported: with availability on in
// Zigbee2MQTT's config (bridge/info, retained), a device reads offline
// until its availability topic reports, as Home Assistant's Zigbee2MQTT
// discovery then names that topic; a retained report read at the start
// counts. With it off, or no bridge/info, nothing will report: the
// device's availability stays unknown (read as available).
func TestZ2MAvailabilityUntilReported(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		waits      bool // porch reads offline until it reports
	}{
		{"on (2.x)", `{"version":"2.1.0","config":{"availability":{"enabled":true}}}`, true},
		{"on (1.x)", `{"version":"1.40.0","config":{"availability":true}}`, true},
		{"on (1.x object)", `{"version":"1.40.0","config":{"availability":{"active":{"timeout":10}}}}`, true},
		{"legacy timeout", `{"version":"1.20.0","config":{"advanced":{"availability_timeout":60}}}`, true},
		{"off", `{"version":"2.1.0","config":{"availability":{"enabled":false}}}`, false},
		{"no bridge/info", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			retained := []mqtt.Message{
				{Topic: "zigbee2mqtt/bridge/devices", Payload: []byte(testutil.Z2MBridge(testutil.Z2MLight("0x10", "hall_light"), testutil.Z2MLight("0x11", "porch_light")))},
				{Topic: "zigbee2mqtt/hall_light/availability", Payload: []byte(`{"state":"online"}`)},
			}
			if tc.info != "" {
				retained = append(retained, mqtt.Message{Topic: "zigbee2mqtt/bridge/info", Payload: []byte(tc.info)})
			}
			cat, c := testbus.Start(t, "z2m-avail", retained, "hall_light.set", "porch_light.set")
			avail := func(id string) *bool { l, _ := cat.Live(id); return l.Available }
			testutil.Eventually(t, 5*time.Second, "hall_light online", func() bool { a := avail("hall_light.state"); return a != nil && *a })
			if tc.info != "" {
				testutil.Eventually(t, 5*time.Second, "bridge/info read", func() bool { a := avail("porch_light.state"); return (a != nil) == tc.waits })
			}
			if a := avail("porch_light.state"); tc.waits != (a != nil && !*a) || (!tc.waits && a != nil) {
				t.Fatalf("porch_light before any availability: %v, want offline %v", a, tc.waits)
			}
			if err := c.Publish(context.Background(), "zigbee2mqtt/porch_light/availability", []byte("online"), 1, true); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, 5*time.Second, "porch_light online", func() bool { a := avail("porch_light.state"); return a != nil && *a })
		})
	}
}
