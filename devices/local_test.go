package devices

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/pilotage"
)

// flagDevice is a local device with one boolean state whose toggle action
// flips it through SetLocal, as a helper does.
func flagDevice(c *Catalog, id string, mu *sync.Mutex, on *bool) LocalDevice {
	return LocalDevice{ID: id, Name: id, Type: "helper", Area: "living",
		States: []LocalState{{ID: id + ".state", Key: "state", Schema: map[string]any{"type": "boolean"}}},
		Actions: []LocalAction{{ID: id + ".toggle", Risk: pilotage.RiskControl, Input: map[string]any{"type": "object"},
			Check: func(args map[string]any) error {
				if len(args) > 0 {
					return errors.New("takes no arguments")
				}
				return nil
			},
			Run: func(context.Context, map[string]any) error {
				mu.Lock()
				*on = !*on
				v := *on
				mu.Unlock()
				c.SetLocal(id+".state", v)
				return nil
			}}},
	}
}

// TestLocalDevices: a local device's entries are a device's, its action
// runs its own function, a subscriber that calls it while the bus's
// ingestion runs (a rule fired by an MQTT event) does not deadlock and
// sees the change told after, a discovered device's id is refused, and
// RemoveLocal takes the entries out.
func TestLocalDevices(t *testing.T) {
	c := NewCatalog(Options{})
	var mu sync.Mutex
	on := false
	if err := c.PutLocal(flagDevice(c, "guest_mode", &mu, &on), map[string]any{"guest_mode.state": false}); err != nil {
		t.Fatal(err)
	}
	if e, ok := c.Snapshot().Get("guest_mode.state"); !ok || e.Kind != pilotage.KindState || len(e.Tags) != 3 || e.Tags[2] != "area:living" {
		t.Fatalf("state entry: %+v", e)
	}
	if err := c.CheckArgs("guest_mode.toggle", map[string]any{"x": 1}); err == nil {
		t.Fatal("Check was not run")
	}
	var seen sync.Mutex
	var changes []any
	c.Subscribe(func(ch Change) {
		if (ch.Kind == ChangeState || ch.Kind == ChangeEvent) && (ch.ID == "bench_sensor_0.count0" || ch.ID == "bell.ring") {
			// Called during ingestion (the bus's, the local changes'),
			// as a rule fired by the change is.
			if err := c.Call(context.Background(), "guest_mode.toggle", nil); err != nil {
				t.Error(err)
			}
		}
		if ch.Kind == ChangeState && ch.ID == "guest_mode.state" {
			seen.Lock()
			changes = append(changes, ch.Value)
			seen.Unlock()
		}
	})
	c.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bridge/devices", Payload: SyntheticZ2MHouse(1, 1)})
	c.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bench_sensor_0", Payload: []byte(`{"count0": 1}`)})
	ev := LocalDevice{ID: "bell", Events: []LocalEvent{{ID: "bell.ring", Values: []string{"ring"}}}}
	if err := c.PutLocal(ev, nil); err != nil {
		t.Fatal(err)
	}
	c.FireLocal("bell.ring", "ring")
	testutil.Eventually(t, 10*time.Second, "both toggles told, in order", func() bool {
		seen.Lock()
		defer seen.Unlock()
		return len(changes) == 2 && changes[0] == true && changes[1] == false
	})
	if l, _ := c.Live("guest_mode.state"); l.Value != false {
		t.Errorf("live %v", l.Value)
	}
	if err := c.PutLocal(LocalDevice{ID: "bench_sensor_0"}, nil); !errors.Is(err, ErrIDTaken) {
		t.Errorf("a discovered device's id: %v", err)
	}
	c.RemoveLocal("guest_mode")
	if _, ok := c.Snapshot().Get("guest_mode.toggle"); ok {
		t.Error("guest_mode.toggle still in the catalog")
	}
	c.SetLocal("guest_mode.state", false) // gone: ignored
	if _, ok := c.Live("guest_mode.state"); ok {
		t.Error("a removed local state still has a live value")
	}
}

// TestHelperIDsKeptFromTheBus: a device from the bus named like a helper
// gets a suffixed id (it used to take the helper's entries from the rules
// naming them, in Zigbee2MQTT's list or Home Assistant discovery alike),
// and a helper may not take an id a device holds or that is kept for a
// device that left.
func TestHelperIDsKeptFromTheBus(t *testing.T) {
	left := time.Now().Add(-time.Hour)
	reg := &memRegistry{m: map[string]model.IDAssignment{
		"away_flag": {ID: "away_flag", Key: "z2m:0x0002", Base: "away_flag", Left: left},
	}}
	h := runHouse(t, houseOptions{Options: Options{IDs: reg}})
	var mu sync.Mutex
	on := false
	if err := h.c.PutLocal(flagDevice(h.c, "hall_flag", &mu, &on), map[string]any{"hall_flag.state": false}); err != nil {
		t.Fatal(err)
	}
	z2m := `[{"ieee_address":"0x0001","friendly_name":"hall_flag","type":"EndDevice","supported":true,"definition":{"vendor":"Aqara","model":"M1","description":"Motion","exposes":[{"type":"binary","name":"occupancy","property":"occupancy","access":1,"value_on":true,"value_off":false}]}}]`
	h.publish(t, "zigbee2mqtt/bridge/devices", z2m, "hall_flag_2.occupancy")
	h.publish(t, "homeassistant/binary_sensor/hf/motion/config",
		`{"name":"Motion","unique_id":"hf_motion","state_topic":"hf/motion","device":{"identifiers":["hf-1"],"name":"Hall Flag"}}`, "hall_flag_3")
	if e, ok := h.c.Snapshot().Get("hall_flag.toggle"); !ok || e.Kind != pilotage.KindAction {
		t.Fatalf("the helper lost its action: %+v %v", e, ok)
	}
	if err := h.c.Call(t.Context(), "hall_flag.toggle", nil); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the helper's own state to change", func() bool {
		l, _ := h.c.Live("hall_flag.state")
		return l.Value == true
	})
	if !strings.Contains(h.logs.String(), "device id taken by a helper") {
		t.Errorf("the suffix was not logged:\n%s", h.logs.String())
	}
	for _, tc := range []struct{ id, says string }{
		{"hall_flag_2", "is a device"},
		{"away_flag", "which left at"},
	} {
		err := h.c.PutLocal(LocalDevice{ID: tc.id}, nil)
		if !errors.Is(err, ErrIDTaken) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("a helper named %s: %v, want ErrIDTaken saying %q", tc.id, err, tc.says)
		}
	}
}
