package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// bridgeDevice is a Zigbee2MQTT device of a bridge/devices list, its
// exposes given.
func bridgeDevice(name string, n int, exposes []any) map[string]any {
	return map[string]any{"ieee_address": fmt.Sprintf("0xbd%014x", n), "friendly_name": name, "type": "Router",
		"definition": map[string]any{"model": "M", "vendor": "V", "description": "d", "exposes": exposes}}
}

// numerics is n numeric exposes.
func numerics(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"type": "numeric", "name": fmt.Sprintf("p%d", i), "property": fmt.Sprintf("p%d", i), "access": 7}
	}
	return out
}

// nested is a composite whose features nest depth deep.
func nested(depth int) []any {
	e := map[string]any{"type": "numeric", "name": "leaf", "property": "leaf", "access": 1}
	for i := 1; i < depth; i++ {
		e = map[string]any{"type": "composite", "name": fmt.Sprintf("c%d", i), "property": fmt.Sprintf("c%d", i), "access": 7, "features": []any{e}}
	}
	return []any{e}
}

// publishList publishes the demo house's device list and devs.
func publishList(t *testing.T, h *testhouse.House, devs []any) {
	t.Helper()
	demo := make(chan []byte, 1)
	if err := h.Conn.Subscribe("zigbee2mqtt/bridge/devices", 0, func(m mqtt.Message) {
		select {
		case demo <- m.Payload:
		default:
		}
	}); err != nil {
		t.Fatal(err)
	}
	var all []any
	select {
	case p := <-demo:
		if err := json.Unmarshal(p, &all); err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no retained device list from the demo house")
	}
	b, err := json.Marshal(append(all, devs...))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Conn.Publish(context.Background(), "zigbee2mqtt/bridge/devices", b, 1, false); err != nil {
		t.Fatal(err)
	}
}

// TestHostileBridgeListIsBounded (attacker finding F9): the exposes of a
// bridge/devices list were not bounded. A device past a bound is listed,
// not modelled, its description saying why, counted on /healthz; the
// rest of the list is modelled.
func TestHostileBridgeListIsBounded(t *testing.T) {
	cases := []struct {
		name    string
		maxList int
		devs    []any
		over    []string // devices not modelled
		why     string
	}{
		{"a device of too many exposes", 0, []any{bridgeDevice("wide", 1, numerics(1025)), bridgeDevice("ok2", 2, numerics(3))},
			[]string{"wide"}, "lists 1025 exposes and features, over the 1024"},
		{"features nested too deep", 0, []any{bridgeDevice("deep", 1, nested(13)), bridgeDevice("ok2", 2, numerics(3))},
			[]string{"deep"}, "nest 13 deep, over the 12"},
		{"a list past its exposes", 1000, []any{bridgeDevice("ok", 1, numerics(30)), bridgeDevice("past", 2, numerics(1000)),
			bridgeDevice("ok2", 3, numerics(3))}, []string{"past"}, "1000 exposes and features do not fit in the 1000 of a device list"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := testhouse.RunHouse(t, testhouse.Options{Devices: devices.Options{MaxListExposes: tc.maxList}})
			publishList(t, h, tc.devs)
			testutil.Eventually(t, 10*time.Second, "the list in the catalog", func() bool {
				_, ok := h.Devices.Snapshot().Get("ok2.p1")
				_, over := h.Devices.Snapshot().Get(tc.over[len(tc.over)-1])
				return ok && over
			})
			for _, id := range tc.over {
				e, _ := h.Devices.Snapshot().Get(id)
				if !strings.Contains(e.Description, tc.why) {
					t.Errorf("%s says %q, want it to say %q", id, e.Description, tc.why)
				}
				if _, ok := h.Devices.Snapshot().Get(id + ".p0"); ok {
					t.Errorf("%s.p0 in the catalog: the device past a bound is modelled", id)
				}
			}
			if got := h.Devices.Refusals().BridgeDevicesOverBound; got != uint64(len(tc.over)) {
				t.Errorf("bridge_devices_over_bound %d, want %d", got, len(tc.over))
			}
		})
	}
}

// TestBigBridgeListKeepsRulesFiring (F9): a bridge/devices list was read
// at once on the subscription's delivery, holding the catalog's ingest
// lock, so a rule on another device fired only once the whole list was
// modelled (18 s for 8,000 devices of 30 exposes). The list is now read
// in steps on a goroutine of its own: the hall rule fires while the list
// is still being modelled.
func TestBigBridgeListKeepsRulesFiring(t *testing.T) {
	const n = 300
	h := testhouse.RunHouse(t, testhouse.Options{})
	fired := make(chan struct{}, 16)
	if err := h.Conn.Subscribe("zigbee2mqtt/hall_light/set", 0, func(mqtt.Message) { fired <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	deployed(t, h.InProcess(), `{"name":"motion-light","mode":"queued","triggers":[{"id":"m","state":"hall_motion.occupancy"}],
	  "steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)
	devs := make([]any, n)
	for i := range devs {
		devs[i] = bridgeDevice(fmt.Sprintf("big%d", i), i, numerics(20))
	}
	last := fmt.Sprintf("big%d.p19", n-1)
	read := h.Devices.ConfigsRead()
	publishList(t, h, devs)
	testutil.Eventually(t, 10*time.Second, "the list being read", func() bool { return h.Devices.ConfigsRead() > read })
	begun := time.Now()
	if err := h.Sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": true}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fired:
	case <-time.After(10 * time.Second):
		t.Fatal("the hall rule did not fire within 10 s of the motion")
	}
	took := time.Since(begun)
	if _, done := h.Devices.Snapshot().Get(last); done || took > 2*time.Second {
		t.Errorf("the hall rule fired %v after the motion, the list of %d devices modelled: %v; want it within 2 s, before the list", took, n, done)
	}
	testutil.Eventually(t, 60*time.Second, "the whole list in the catalog", func() bool {
		_, ok := h.Devices.Snapshot().Get(last)
		return ok
	})
	t.Logf("the hall rule fired %v after the motion while the list was modelled", took)
}
