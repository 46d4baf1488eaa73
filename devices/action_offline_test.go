package devices

import (
	"context"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/mqtt"
)

// TestCallSaysOfflineDevice: a call to a device whose availability says
// offline is still published, and what was sent says which device was
// offline and when it was last heard from; a device online or of unknown
// availability says nothing. The look-up allocates nothing.
func TestCallSaysOfflineDevice(t *testing.T) {
	c, clk := newTestCatalog()
	c.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bridge/devices", Payload: SyntheticZ2MHouse(2, 2)})
	conn := newFakeConn()
	if err := c.Start(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	heard := clk.t
	c.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bench_light_1", Payload: []byte(`{"state":"OFF"}`)})
	args := map[string]any{"state": "ON"}
	for _, tc := range []struct {
		name, avail string // "" publishes no availability
		wantOff     bool
	}{
		{"unknown availability", "", false},
		{"online", "online", false},
		{"offline", "offline", true},
		{"back online", "online", false},
	} {
		clk.t = clk.t.Add(time.Minute)
		if tc.avail != "" {
			c.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bench_light_1/availability", Payload: []byte(`{"state":"` + tc.avail + `"}`)})
		}
		sync, err := c.CallSent(context.Background(), "bench_light_1.set", args)
		if err != nil {
			t.Fatalf("%s: CallSent: %v", tc.name, err)
		}
		async, err := c.CallAsync(context.Background(), "bench_light_1.set", args, mqtt.AckFunc(func(error) {}))
		if err != nil {
			t.Fatalf("%s: CallAsync: %v", tc.name, err)
		}
		for _, sent := range []Sent{sync, async} {
			dev, last, off := sent.Offline()
			if sent.Topic() != "zigbee2mqtt/bench_light_1/set" || off != tc.wantOff || (off && (dev != "bench_light_1" || !last.Equal(heard))) {
				t.Errorf("%s: sent to %q, Offline() = %q, %v, %v; want offline %v (bench_light_1, last heard %v)", tc.name, sent.Topic(), dev, last, off, tc.wantOff, heard)
			}
		}
		allocs := testing.AllocsPerRun(50, func() {
			if _, err := c.CallSent(context.Background(), "bench_light_1.set", args); err != nil {
				t.Fatal(err)
			}
		})
		base := testing.AllocsPerRun(50, func() {
			if _, err := c.CallSent(context.Background(), "bench_light_0.set", args); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != base {
			t.Errorf("%s: a call allocates %.1f times, one to a device without availability %.1f", tc.name, allocs, base)
		}
	}
}
