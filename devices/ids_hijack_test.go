package devices

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// haTemp is a temperature sensor's discovery config on a device.
func haTemp(uid, stateTopic, ident, devName string) string {
	return fmt.Sprintf(`{"name":"Temperature","unique_id":"%s","device_class":"temperature","state_topic":"%s",
		"device":{"identifiers":["%s"],"name":"%s"}}`, uid, stateTopic, ident, devName)
}

// The attacker's two configs of the re-test (issue 14, item 6): one joins
// the real station (its identifiers) under another device name, one is a
// new device named like the station. Their topics sort before the real
// one's, as evil6 sorts before outdoor_weather.
const (
	joinTopic = "homeassistant/sensor/aaa6/temperature/config"
	newTopic  = "homeassistant/sensor/aaa7/temperature/config"
)

var (
	joinConfig = haTemp("evil6_temp", "evil/6", "ws-1", "hijack")
	newConfig  = haTemp("evil7_temp", "evil/7", "attacker_station", "Outdoor Weather")
)

// TestDeviceIDHijackInTwoSteps: a config with the station's identifiers
// and another name neither renames the station's id (ids are pinned to
// the device, as Home Assistant pins entity ids to unique ids) nor takes
// the station's temperature (entities within a device are first come
// too); a newcomer named like the station gets a suffix; the attacker's
// topics never move outdoor_weather.temperature; and after a restart in
// which the attacker's configs arrive first, everything keeps its id.
func TestDeviceIDHijackInTwoSteps(t *testing.T) {
	reg := &memRegistry{}
	h := runHouse(t, houseOptions{Options: Options{IDs: reg}})
	h.publish(t, realWeather, weatherConfig("ws-1", "weather/real"), "outdoor_weather.temperature")
	h.publish(t, joinTopic, joinConfig, "outdoor_weather.sensor")
	h.publish(t, newTopic, newConfig, "outdoor_weather_2.temperature")
	checkNotHijacked(t, h)
	wantReg := map[string]string{"ha:ids:ws-1": "outdoor_weather", "ha:ids:attacker_station": "outdoor_weather_2"}
	wantSlots := map[string]string{"ha:ent:uid:sensor/ws-1_temp": "outdoor_weather#temperature",
		"ha:ent:uid:sensor/evil6_temp": "outdoor_weather#sensor", "ha:ent:uid:sensor/evil7_temp": "outdoor_weather_2#temperature"}
	if got := reg.ids(); !reflect.DeepEqual(got, wantReg) {
		t.Fatalf("registry %v, want %v", got, wantReg)
	}
	if got := reg.slots(); !reflect.DeepEqual(got, wantSlots) {
		t.Fatalf("entity slots %v, want %v", got, wantSlots)
	}

	// Restart on a fresh broker: the attacker's configs arrive first.
	h2 := runHouse(t, houseOptions{Options: Options{IDs: reg}})
	h2.publish(t, joinTopic, joinConfig, "outdoor_weather.sensor")
	if _, ok := h2.c.Snapshot().Get("outdoor_weather.temperature"); ok {
		t.Fatal("after a restart the joining entity took outdoor_weather.temperature")
	}
	h2.publish(t, newTopic, newConfig, "outdoor_weather_2.temperature")
	h2.publish(t, realWeather, weatherConfig("ws-1", "weather/real"), "outdoor_weather.temperature")
	checkNotHijacked(t, h2)
	if got := reg.ids(); !reflect.DeepEqual(got, wantReg) {
		t.Fatalf("after restart: registry %v, want %v", got, wantReg)
	}
	if got := reg.slots(); !reflect.DeepEqual(got, wantSlots) {
		t.Fatalf("after restart: entity slots %v, want %v", got, wantSlots)
	}
}

// checkNotHijacked: the station is outdoor_weather and its temperature
// follows its own topic only.
func checkNotHijacked(t *testing.T, h *house) {
	t.Helper()
	if got, want := deviceIDs(h.c), []string{"outdoor_weather", "outdoor_weather_2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("devices %v, want %v", got, want)
	}
	h.liveOf(t, "weather/real", "7.5", "outdoor_weather.temperature", 7.5)
	h.liveOf(t, "evil/6", "-77", "outdoor_weather.sensor", -77.0)
	h.liveOf(t, "evil/7", "-78", "outdoor_weather_2.temperature", -78.0)
	if l, _ := h.c.Live("outdoor_weather.temperature"); fmt.Sprint(l.Value) != "7.5" {
		t.Fatalf("the attacker's topics moved outdoor_weather.temperature to %v", l.Value)
	}
}

// TestDuplicateUniqueIDDoesNotTakeTheEntity: a config reusing the
// station's unique_id (and identifiers) on a topic that sorts first is a
// duplicate of the entity that came first, also after a restart in which
// it arrives first: outdoor_weather.temperature keeps following the
// station's topic, the duplicate's topic reaches nothing.
func TestDuplicateUniqueIDDoesNotTakeTheEntity(t *testing.T) {
	reg := &memRegistry{}
	dup := haTemp("ws-1_temp", "evil/dup", "ws-1", "Outdoor Weather")
	const dupTopic = "homeassistant/sensor/aaa_dup/temperature/config"
	real := [2]string{realWeather, weatherConfig("ws-1", "weather/real")}
	for i, order := range [][2][2]string{
		{real, {dupTopic, dup}},
		{{dupTopic, dup}, real}, // restart: the duplicate first
	} {
		c, _ := loadedCatalog(t, reg)
		for _, m := range order {
			c.HandleMessage(msg(m[0], m[1]))
		}
		c.HandleMessage(msg("weather/real", "7.5"))
		c.HandleMessage(msg("evil/dup", "-77"))
		if l, _ := c.Live("outdoor_weather.temperature"); fmt.Sprint(l.Value) != "7.5" {
			t.Fatalf("run %d: the duplicate moved outdoor_weather.temperature to %v (devices %v)", i, l.Value, deviceIDs(c))
		}
	}
	if got, want := reg.slots(), map[string]string{"ha:ent:uid:sensor/ws-1_temp": "outdoor_weather#temperature"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("entity slots %v, want %v", got, want)
	}
}

// TestUniqueIDMovesToANewTopic: a config whose topic this run saw leave
// (a device moving to another discovery topic, e.g. migrate_discovery)
// hands its segment to the config that takes up its unique_id, also
// after a restart.
func TestUniqueIDMovesToANewTopic(t *testing.T) {
	reg := &memRegistry{}
	const moved = "homeassistant/sensor/ws1_v2/temperature/config"
	c, _ := loadedCatalog(t, reg)
	c.HandleMessage(msg(realWeather, weatherConfig("ws-1", "weather/real")))
	c.HandleMessage(msg(realWeather, `{"migrate_discovery":true}`))
	c.HandleMessage(msg(moved, weatherConfig("ws-1", "weather/v2")))
	for i := range 2 {
		c.HandleMessage(msg("weather/v2", "6.5"))
		if l, _ := c.Live("outdoor_weather.temperature"); fmt.Sprint(l.Value) != "6.5" {
			t.Fatalf("run %d: outdoor_weather.temperature = %v, want the moved config's 6.5 (%v)", i, l.Value, reg.slots())
		}
		c, _ = loadedCatalog(t, reg) // restart: only the new topic
		c.HandleMessage(msg(moved, weatherConfig("ws-1", "weather/v2")))
	}
}

// TestJoiningConfigDoesNotRenameTheDevice: a config joining the station
// with its identifiers, on a topic that sorts first, under another device
// name, manufacturer, suggested area and an origin naming an area,
// changes neither the station's name, manufacturer nor area: the
// first-seen config (the holder) says them, also after either config is
// published again.
func TestJoiningConfigDoesNotRenameTheDevice(t *testing.T) {
	c, _ := newTestCatalog()
	station := `{"name":"Temperature","unique_id":"ws-1_temp","device_class":"temperature","state_topic":"weather/real",
		"device":{"identifiers":["ws-1"],"name":"Outdoor Weather","manufacturer":"Acme","model":"WS1","suggested_area":"Garden"}}`
	join := `{"name":"Temperature","unique_id":"evil6_temp","device_class":"temperature","state_topic":"evil/6",
		"device":{"identifiers":["ws-1"],"name":"hijack","manufacturer":"Evil","model":"X","suggested_area":"Attic"},"origin":{"name":"area:Attic"}}`
	check := func(step string) {
		t.Helper()
		e, ok := c.Snapshot().Get("outdoor_weather")
		if !ok {
			t.Fatalf("%s: no outdoor_weather (devices %v)", step, deviceIDs(c))
		}
		if e.Name != "Outdoor Weather" || !strings.HasPrefix(e.Description, "Acme WS1") || !hasTag(e, "area:Garden") || hasTag(e, "area:Attic") {
			t.Fatalf("%s: station is %q %q %v", step, e.Name, e.Description, e.Tags)
		}
		if _, ok := c.Snapshot().Get("outdoor_weather.sensor"); !ok {
			t.Fatalf("%s: the joining entity is not on the station (devices %v)", step, deviceIDs(c))
		}
	}
	c.HandleMessage(msg(realWeather, station))
	c.HandleMessage(msg(joinTopic, join))
	check("joined")
	c.HandleMessage(msg(realWeather, strings.Replace(station, "Temperature", "Temp", 1)))
	check("the station's config again")
	c.HandleMessage(msg(joinTopic, strings.Replace(join, "evil/6", "evil/66", 1)))
	check("the joining config again")
}
