package main

import (
	"reflect"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestConfigAreas: the file's areas mapping gives devices their area, and
// wins over what the device announces (the demo garage door says
// area:garage in its Zigbee2MQTT description).
func TestConfigAreas(t *testing.T) {
	c, _, err := loadYAML(t, "areas:\n  workshop: [garage_*]\n  hall: [hall_*, front_door]\n")
	if err != nil {
		t.Fatal(err)
	}
	want := []devices.AreaRule{{Area: "workshop", Devices: []string{"garage_*"}}, {Area: "hall", Devices: []string{"hall_*", "front_door"}}}
	if !reflect.DeepEqual(c.Areas, want) {
		t.Fatalf("areas: %+v", c.Areas)
	}
	for body, msg := range map[string]string{
		"areas: [a]\n":               "config pilothouse.yaml:1:8: areas: want a mapping of area names to device patterns, got a list",
		"areas:\n  hall: []\n":       `config pilothouse.yaml:2:9: areas.hall: want at least one device pattern (e.g. "hall_*")`,
		"areas:\n  hall: [\"[x\"]\n": `config pilothouse.yaml:2:10: areas.hall[0]: bad device pattern "[x"`,
	} {
		if _, _, err := loadYAML(t, body); err == nil || err.Error() != msg {
			t.Errorf("%q:\n got %v\nwant %s", body, err, msg)
		}
	}

	cfg := testConfig(t)
	cfg.Areas = want[:1]
	a := startTestApp(t, cfg)
	tags := func(id string) []string {
		e, ok := a.devs.Snapshot().Get(id)
		if !ok {
			return nil
		}
		return e.Tags
	}
	testutil.Eventually(t, 10*time.Second, "the demo devices", func() bool { return tags("garage_door") != nil && tags("hall_light") != nil })
	for id, area := range map[string]string{"garage_door": "area:workshop", "hall_light": "area:hall", "living_plug.set": "area:living"} {
		if !has(tags(id), area) {
			t.Errorf("%s tags %v, want %s", id, tags(id), area)
		}
	}
	if has(tags("garage_door"), "area:garage") {
		t.Errorf("garage_door keeps its announced area beside the configured one: %v", tags("garage_door"))
	}
}
