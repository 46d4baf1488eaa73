package devices

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// memRegistry is an IDRegistry in memory (storage implements the real one;
// devices may not import it), by id.
type memRegistry struct {
	mu    sync.Mutex
	m     map[string]model.IDAssignment
	fail  error
	saves int
}

func (r *memRegistry) LoadDeviceIDs(context.Context) ([]model.IDAssignment, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []model.IDAssignment
	for _, a := range r.m {
		out = append(out, a)
	}
	return out, nil
}

func (r *memRegistry) SaveDeviceIDs(_ context.Context, put []model.IDAssignment, del []string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	if r.m == nil {
		r.m = map[string]model.IDAssignment{}
	}
	for _, id := range del {
		delete(r.m, id)
	}
	for _, a := range put {
		r.m[a.ID] = a
	}
	r.saves++
	return nil
}

// ids returns the device ids each device key holds.
func (r *memRegistry) ids() map[string]string {
	return r.rows(func(a model.IDAssignment) bool { return a.Left.IsZero() && !strings.HasPrefix(a.Key, "ha:ent:") })
}

// reserved returns the device ids reserved for a device that left them.
func (r *memRegistry) reserved() map[string]string {
	return r.rows(func(a model.IDAssignment) bool { return !a.Left.IsZero() && !strings.HasPrefix(a.Key, "ha:ent:") })
}

// slots returns the segments Home Assistant entities hold.
func (r *memRegistry) slots() map[string]string {
	return r.rows(func(a model.IDAssignment) bool { return a.Left.IsZero() && strings.HasPrefix(a.Key, "ha:ent:") })
}

func (r *memRegistry) rows(keep func(model.IDAssignment) bool) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for _, a := range r.m {
		if keep(a) {
			out[a.Key] = a.ID
		}
	}
	return out
}

// weatherConfig is a Home Assistant discovery config of a temperature
// sensor on a device named "Outdoor Weather" with the given identifier.
func weatherConfig(ident, stateTopic string) string {
	return fmt.Sprintf(`{"name":"Temperature","unique_id":"%s_temp","device_class":"temperature","state_topic":"%s",
		"device":{"identifiers":["%s"],"name":"Outdoor Weather"}}`, ident, stateTopic, ident)
}

const (
	realWeather = "homeassistant/sensor/ws1/temperature/config"
	evilWeather = "homeassistant/sensor/aaa_evil/temperature/config"
	evilMotion  = "homeassistant/binary_sensor/aab_evil/motion/config"
	// The attacker's Zigbee2MQTT device list names a device after the
	// Home Assistant one.
	z2mList = `[{"ieee_address":"0x0001","friendly_name":"hall_motion","type":"EndDevice","supported":true,"definition":{"vendor":"Aqara","model":"M1","description":"Motion","exposes":[{"type":"binary","name":"occupancy","property":"occupancy","access":1,"value_on":true,"value_off":false}]}},
		{"ieee_address":"0x0bad","friendly_name":"outdoor_weather","type":"EndDevice","supported":true,"definition":{"vendor":"Evil","model":"E1","description":"Fake","exposes":[{"type":"numeric","name":"temperature","property":"temperature","access":1}]}}]`
)

func deviceIDs(c *Catalog) []string {
	var out []string
	for _, e := range c.Snapshot().Entries() {
		if e.Kind == "device" {
			out = append(out, e.ID)
		}
	}
	sort.Strings(out)
	return out
}

// TestDeviceIDTakeoverOverMQTT: a discovery config with other identifiers
// but the same name as a known device, from Home Assistant discovery or a
// Zigbee2MQTT device list, gets a suffixed id; the original keeps its id
// and its topics; and after a restart each keeps its id although the
// newcomers arrive first (issue 14, item 6).
func TestDeviceIDTakeoverOverMQTT(t *testing.T) {
	reg := &memRegistry{}
	h := runHouse(t, houseOptions{Options: Options{IDs: reg}})
	h.publish(t, realWeather, weatherConfig("ws-1", "weather/real"), "outdoor_weather.temperature")
	h.publish(t, evilWeather, weatherConfig("a-evil", "weather/evil"), "outdoor_weather_2.temperature")
	h.publish(t, "zigbee2mqtt/bridge/devices", z2mList, "outdoor_weather_3.temperature")
	h.publish(t, evilMotion, `{"name":"Motion","unique_id":"evil_motion","state_topic":"motion/evil","device":{"identifiers":["b-evil"],"name":"Hall Motion"}}`, "hall_motion_2")
	h.liveOf(t, "weather/real", "7.5", "outdoor_weather.temperature", 7.5)
	h.liveOf(t, "weather/evil", "99", "outdoor_weather_2.temperature", 99.0)
	h.liveOf(t, "zigbee2mqtt/outdoor_weather", `{"temperature":98}`, "outdoor_weather_3.temperature", 98.0)
	if l, _ := h.c.Live("outdoor_weather.temperature"); fmt.Sprint(l.Value) != "7.5" {
		t.Fatalf("the attackers' topics moved outdoor_weather.temperature to %v", l.Value)
	}
	want := []string{"hall_motion", "hall_motion_2", "outdoor_weather", "outdoor_weather_2", "outdoor_weather_3"}
	if got := deviceIDs(h.c); !reflect.DeepEqual(got, want) {
		t.Fatalf("devices %v, want %v", got, want)
	}
	wantReg := map[string]string{"ha:ids:ws-1": "outdoor_weather", "ha:ids:a-evil": "outdoor_weather_2",
		"z2m:0x0bad": "outdoor_weather_3", "z2m:0x0001": "hall_motion", "ha:ids:b-evil": "hall_motion_2"}
	if got := reg.ids(); !reflect.DeepEqual(got, wantReg) {
		t.Fatalf("registry %v, want %v", got, wantReg)
	}

	// Restart on a fresh broker: the newcomers arrive first, alone.
	h2 := runHouse(t, houseOptions{Options: Options{IDs: reg}})
	h2.publish(t, evilWeather, weatherConfig("a-evil", "weather/evil"), "outdoor_weather_2.temperature")
	h2.publish(t, evilMotion, `{"name":"Motion","unique_id":"evil_motion","state_topic":"motion/evil","device":{"identifiers":["b-evil"],"name":"Hall Motion"}}`, "hall_motion_2")
	if _, ok := h2.c.Snapshot().Get("outdoor_weather"); ok {
		t.Fatal("after a restart the newcomer took outdoor_weather")
	}
	h2.publish(t, "zigbee2mqtt/bridge/devices", z2mList, "outdoor_weather_3")
	h2.publish(t, realWeather, weatherConfig("ws-1", "weather/real"), "outdoor_weather.temperature")
	h2.liveOf(t, "weather/real", "8", "outdoor_weather.temperature", 8.0)
	if got := deviceIDs(h2.c); !reflect.DeepEqual(got, want) {
		t.Fatalf("after restart: devices %v, want %v", got, want)
	}
	if got := reg.ids(); !reflect.DeepEqual(got, wantReg) {
		t.Fatalf("after restart: registry %v, want %v", got, wantReg)
	}
}

// idStep is one discovery message and the device ids after it.
type idStep struct {
	name  string
	topic string
	body  string
	want  []string
}

func runIDSteps(t *testing.T, c *Catalog, steps []idStep) {
	t.Helper()
	for _, st := range steps {
		c.HandleMessage(msg(st.topic, st.body))
		if got := deviceIDs(c); !reflect.DeepEqual(got, st.want) {
			t.Fatalf("%s: devices %v, want %v", st.name, got, st.want)
		}
	}
}

func loadedCatalog(t *testing.T, reg *memRegistry) (*Catalog, *fakeClock) {
	t.Helper()
	c, clk := newTestCatalog(func(o *Options) { o.IDs = reg })
	if err := c.loadIDs(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, clk
}

// TestDeviceIDsReservedRenamedAndDuplicates: a device that leaves keeps
// its id reserved (a newcomer with its name gets a suffix, it gets its id
// back); a rename by discovery keeps the id; two devices claiming one
// identity in one list: the first wins; Zigbee2MQTT's own Home Assistant
// discovery of a native device shares its id in either order.
func TestDeviceIDsReservedRenamedAndDuplicates(t *testing.T) {
	reg := &memRegistry{}
	c, _ := loadedCatalog(t, reg)
	runIDSteps(t, c, []idStep{
		{"real", realWeather, weatherConfig("ws-1", "weather/real"), []string{"outdoor_weather"}},
		{"newcomer", evilWeather, weatherConfig("a-evil", "weather/evil"), []string{"outdoor_weather", "outdoor_weather_2"}},
		{"the original leaves", realWeather, "", []string{"outdoor_weather_2"}},
		{"a newcomer meanwhile", "homeassistant/sensor/c/t/config", weatherConfig("c-new", "weather/c"), []string{"outdoor_weather_2", "outdoor_weather_3"}},
		{"the original comes back", realWeather, weatherConfig("ws-1", "weather/real"), []string{"outdoor_weather", "outdoor_weather_2", "outdoor_weather_3"}},
		{"a rename by discovery keeps the id", evilWeather, `{"name":"T","state_topic":"w/e","device":{"identifiers":["a-evil"],"name":"Garden"}}`,
			[]string{"outdoor_weather", "outdoor_weather_2", "outdoor_weather_3"}},
		{"Zigbee2MQTT's HA discovery first", "homeassistant/binary_sensor/0x0001/occupancy/config",
			`{"name":"Occupancy","state_topic":"zigbee2mqtt/hall_motion","device":{"identifiers":["zigbee2mqtt_0x0001"],"name":"hall_motion"},"origin":{"name":"Zigbee2MQTT"}}`,
			[]string{"hall_motion", "outdoor_weather", "outdoor_weather_2", "outdoor_weather_3"}},
		{"then its native device", "zigbee2mqtt/bridge/devices", z2mList[:len(z2mList)-1] + `,` + z2mList[1:],
			[]string{"hall_motion", "outdoor_weather", "outdoor_weather_2", "outdoor_weather_3", "outdoor_weather_4"}},
	})
	if e, _ := c.Snapshot().Get("hall_motion"); e == nil || e.Tags[0] != "source:zigbee2mqtt" {
		t.Fatalf("hall_motion is not the native Zigbee2MQTT device: %+v", e)
	}
	if got := reg.reserved(); len(got) != 0 {
		t.Fatalf("reserved %v, want none", got)
	}
	// A device gone from the next (complete) Zigbee2MQTT list leaves its
	// id, reserved for it.
	c.HandleMessage(msg("zigbee2mqtt/bridge/devices", "[]"))
	if got := reg.ids(); got["z2m:0x0001"] != "hall_motion" || got["z2m:0x0bad"] != "" {
		t.Fatalf("after an empty device list the registry is %v (the HA discovery of 0x0001 still holds hall_motion)", got)
	}
	if got := reg.reserved(); got["z2m:0x0bad"] != "outdoor_weather_4" {
		t.Fatalf("after an empty device list, reserved %v", got)
	}
	reg.fail = errors.New("disk full")
	c.HandleMessage(msg(evilMotion, `{"name":"Motion","state_topic":"m/e","device":{"identifiers":["d-new"],"name":"Porch"}}`))
	if _, ok := c.Snapshot().Get("porch"); !ok {
		t.Fatal("a failed save lost the assignment")
	}
	reg.fail = nil
	c.HandleMessage(msg(evilMotion, `{"name":"Motion","state_topic":"m/e","device":{"identifiers":["d-new"],"name":"Porch"},"icon":"x"}`))
	if got := reg.ids(); got["ha:ids:d-new"] != "porch" {
		t.Fatalf("the save was not retried: %v", got)
	}
}

// TestZigbee2MQTTRenameKeepsOldIDReserved: a rename in Zigbee2MQTT moves
// the device's topics, so its id follows; the old id stays reserved for
// it (logged), so a newcomer with the old name does not take it over, and
// renaming back restores it.
func TestZigbee2MQTTRenameKeepsOldIDReserved(t *testing.T) {
	reg := &memRegistry{}
	c, _ := loadedCatalog(t, reg)
	list := func(name string) string {
		return `[{"ieee_address":"0x0001","friendly_name":"` + name + `","type":"EndDevice","supported":true,"definition":{"vendor":"Aqara","model":"M1","description":"Motion","exposes":[{"type":"binary","name":"occupancy","property":"occupancy","access":1,"value_on":true,"value_off":false}]}}]`
	}
	runIDSteps(t, c, []idStep{
		{"listed", "zigbee2mqtt/bridge/devices", list("hall_motion"), []string{"hall_motion"}},
		{"renamed", "zigbee2mqtt/bridge/devices", list("corridor_motion"), []string{"corridor_motion"}},
		{"a newcomer with the old name", evilMotion, `{"name":"Motion","state_topic":"m/e","device":{"identifiers":["b-evil"],"name":"Hall Motion"}}`,
			[]string{"corridor_motion", "hall_motion_2"}},
		{"renamed back", "zigbee2mqtt/bridge/devices", list("hall_motion"), []string{"hall_motion", "hall_motion_2"}},
	})
	if got, want := reg.reserved(), map[string]string{"z2m:0x0001": "corridor_motion"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("reserved %v, want %v", got, want)
	}
}

// TestDeviceIDReservationsEnd: a reservation ends after idReserve, and
// beyond the cap the newest ends first (an attacker round flooded device
// lists until the demo lock's reservation ended and an impostor took its
// id); a reservation loaded from the registry ends too.
func TestDeviceIDReservationsEnd(t *testing.T) {
	reg := &memRegistry{}
	c, clk := loadedCatalog(t, reg)
	c.ids.Limit = 4 // two devices: each keeps its id and its entity's segment
	for i, ident := range []string{"a", "b", "c"} {
		topic := "homeassistant/sensor/" + ident + "/t/config"
		c.HandleMessage(msg(topic, weatherConfig(ident, "w/"+ident)))
		clk.t = clk.t.Add(time.Hour)
		c.HandleMessage(msg(topic, ""))
		if got := len(reg.reserved()); got != min(i+1, 2) {
			t.Fatalf("after %d devices left: %d reserved, want %d (%v)", i+1, got, min(i+1, 2), reg.reserved())
		}
	}
	if got, want := reg.reserved(), map[string]string{"ha:ids:a": "outdoor_weather", "ha:ids:b": "outdoor_weather_2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("reserved %v, want %v (the newest ends first)", got, want)
	}
	clk.t = clk.t.Add(model.IDReserve)
	runIDSteps(t, c, []idStep{{"a month later", "homeassistant/sensor/d/t/config", weatherConfig("d", "w/d"), []string{"outdoor_weather"}}})
	if got := reg.reserved(); len(got) != 0 {
		t.Fatalf("reserved %v a month later", got)
	}
	// Loaded: a reservation from months ago ends at Start.
	old := &memRegistry{m: map[string]model.IDAssignment{"hall_motion": {Key: "ha:ids:x", ID: "hall_motion", Base: "hall_motion", Left: clk.t.Add(-3 * model.IDReserve)}}}
	c2, _ := loadedCatalog(t, old)
	runIDSteps(t, c2, []idStep{{"newcomer", evilMotion, `{"name":"Motion","state_topic":"m/e","device":{"identifiers":["b"],"name":"Hall Motion"}}`, []string{"hall_motion"}}})
}

// TestDeviceIDsAcrossFullAndIncrementalRebuilds: Home Assistant devices
// claim and leave their ids between full rebuilds (a Zigbee2MQTT device
// list), and the two keep one table: an id left between rebuilds stays
// reserved through the next rebuild, where a Zigbee2MQTT device asking
// for it gets a suffix, as a Home Assistant newcomer does after it; the
// device comes back to its id and its entity's segment; a rename by
// discovery keeps the id across a rebuild.
func TestDeviceIDsAcrossFullAndIncrementalRebuilds(t *testing.T) {
	reg := &memRegistry{}
	c, _ := loadedCatalog(t, reg)
	hall := z2mList[:strings.Index(z2mList, "},\n")+1] + "]"
	steps := []idStep{
		{"station", realWeather, weatherConfig("ws-1", "weather/real"), []string{"outdoor_weather"}},
		{"a list", "zigbee2mqtt/bridge/devices", hall, []string{"hall_motion", "outdoor_weather"}},
		{"the station leaves", realWeather, "", []string{"hall_motion"}},
		{"a list naming a device outdoor_weather", "zigbee2mqtt/bridge/devices", z2mList, []string{"hall_motion", "outdoor_weather_2"}},
		{"a newcomer", "homeassistant/sensor/c/t/config", weatherConfig("c-new", "weather/c"), []string{"hall_motion", "outdoor_weather_2", "outdoor_weather_3"}},
		{"the station is back", realWeather, weatherConfig("ws-1", "weather/real"), []string{"hall_motion", "outdoor_weather", "outdoor_weather_2", "outdoor_weather_3"}},
		{"renamed by discovery", realWeather, strings.Replace(weatherConfig("ws-1", "weather/real"), "Outdoor Weather", "Garden", 1),
			[]string{"hall_motion", "outdoor_weather", "outdoor_weather_2", "outdoor_weather_3"}},
		{"a list again", "zigbee2mqtt/bridge/devices", z2mList, []string{"hall_motion", "outdoor_weather", "outdoor_weather_2", "outdoor_weather_3"}},
	}
	for _, st := range steps {
		runIDSteps(t, c, []idStep{st})
		checkSnapshot(t, c)
		if st.name == "a list naming a device outdoor_weather" {
			if got := reg.reserved(); got["ha:ids:ws-1"] != "outdoor_weather" {
				t.Fatalf("%s: reserved %v, want outdoor_weather kept for ha:ids:ws-1", st.name, got)
			}
		}
	}
	if _, ok := c.Snapshot().Get("outdoor_weather.temperature"); !ok {
		t.Fatal("the station's temperature lost its segment")
	}
	want := map[string]string{"ha:ids:ws-1": "outdoor_weather", "z2m:0x0bad": "outdoor_weather_2", "ha:ids:c-new": "outdoor_weather_3", "z2m:0x0001": "hall_motion"}
	if got := reg.ids(); !reflect.DeepEqual(got, want) {
		t.Fatalf("registry %v, want %v", got, want)
	}
	if got := reg.reserved(); len(got) != 0 {
		t.Fatalf("reserved %v, want none", got)
	}
}

// TestDeviceListFloodKeepsEstablishedReservations: lists of fresh devices
// published one after the other (an attacker round: 16 lists of 4,000)
// push a real device out; its id stays reserved however many of the
// flood's devices leave after it, so a later impostor named like it gets
// a suffix, not the id the rules name.
func TestDeviceListFloodKeepsEstablishedReservations(t *testing.T) {
	reg := &memRegistry{}
	c, clk := loadedCatalog(t, reg)
	c.ids.Limit = 8
	z2m := func(ieee, name string) string {
		return fmt.Sprintf(`{"ieee_address":%q,"friendly_name":%q,"definition":{"model":"L","vendor":"V","description":"d","exposes":[]}}`, ieee, name)
	}
	c.HandleMessage(msg("zigbee2mqtt/bridge/devices", "["+z2m("0x00000000000000aa", "front_lock")+"]"))
	for round := range 6 {
		clk.t = clk.t.Add(time.Second)
		var devs []string
		for i := range 5 {
			devs = append(devs, z2m(fmt.Sprintf("0x%014x%02x", round+1, i), fmt.Sprintf("flood_%d_%d", round, i)))
		}
		c.HandleMessage(msg("zigbee2mqtt/bridge/devices", "["+strings.Join(devs, ",")+"]"))
	}
	if got := reg.reserved()["z2m:0x00000000000000aa"]; got != "front_lock" {
		t.Fatalf("after the flood the real device's reservation is %q, want front_lock (reserved %d)", got, len(reg.reserved()))
	}
	c.HandleMessage(msg("zigbee2mqtt/bridge/devices", "["+z2m("0x00000000deadbeef", "front_lock")+"]"))
	if got := deviceIDs(c); !reflect.DeepEqual(got, []string{"front_lock_2"}) {
		t.Fatalf("the impostor got %v, want [front_lock_2]", got)
	}
}

// TestDiscoveryChurnCostsNoSortPerMessage: with the reservations full, a
// storm of Home Assistant devices that each come and go (an attacker's
// 2,500 messages/s) ends one reservation per message without sorting
// them all: the cost of a message does not grow with the reservations.
// The bytes a message allocates show it (a sort of 4,096 copied them all).
func TestDiscoveryChurnCostsNoSortPerMessage(t *testing.T) {
	reg := &memRegistry{}
	c, _ := loadedCatalog(t, reg)
	cfg := func(i int) string {
		return fmt.Sprintf(`{"name":"U%d","uniq_id":"u%d","stat_t":"atk/u/%d","dev":{"ids":["udev%d"],"name":"Uniq %d"}}`, i, i, i, i, i)
	}
	churn := func(from, n int) {
		for i := from; i < from+n; i++ {
			topic := fmt.Sprintf("homeassistant/sensor/u%d/config", i)
			c.HandleMessage(msg(topic, cfg(i)))
			c.HandleMessage(msg(topic, ""))
		}
	}
	limit := c.ids.Limit
	churn(0, limit+100) // full
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 200
	churn(limit+100, n)
	runtime.ReadMemStats(&after)
	perMsg := (after.TotalAlloc - before.TotalAlloc) / (2 * n)
	t.Logf("%d bytes per message", perMsg)
	if perMsg > 64<<10 {
		t.Fatalf("a churned device allocates %d bytes per message with %d reservations", perMsg, limit)
	}
	if got := len(reg.reserved()); got > limit+64 {
		t.Fatalf("%d reservations stored, bound %d", got, limit)
	}
}
