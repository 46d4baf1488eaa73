package rules

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
)

// mapCatalog is a map-based Catalog for tests.
type mapCatalog struct {
	m       map[string]*pilotage.Entry
	ids     []string
	version string
}

func newMapCatalog(version string, entries ...*pilotage.Entry) *mapCatalog {
	c := &mapCatalog{m: map[string]*pilotage.Entry{}, version: version}
	for _, e := range entries {
		c.m[e.ID] = e
		c.ids = append(c.ids, e.ID)
	}
	sort.Strings(c.ids)
	return c
}

func (c *mapCatalog) Get(id string) (*pilotage.Entry, bool) { e, ok := c.m[id]; return e, ok }
func (c *mapCatalog) IDs() []string                         { return c.ids }
func (c *mapCatalog) Version() string                       { return c.version }

func entry(id string, k pilotage.Kind, risk pilotage.Risk, in, out string) *pilotage.Entry {
	e := &pilotage.Entry{ID: id, Kind: k, Callable: pilotage.KindCallable(k), Risk: risk, RiskHints: pilotage.HintsOf(risk)}
	if in != "" {
		e.InputSchema = json.RawMessage(in)
	}
	if out != "" {
		e.OutputSchema = json.RawMessage(out)
	}
	return e
}

const (
	onOff         = `{"type":"string","enum":["ON","OFF"]}`
	lightSet      = `{"type":"object","additionalProperties":false,"minProperties":1,"properties":{"state":{"type":"string","enum":["ON","OFF","TOGGLE"]},"brightness":{"type":"integer","minimum":0,"maximum":254},"transition":{"type":"number","minimum":0}}}`
	onOffLightSet = `{"type":"object","additionalProperties":false,"minProperties":1,"properties":{"state":{"type":"string","enum":["ON","OFF","TOGGLE"]},"transition":{"type":"number","minimum":0}}}`
	plugSet       = `{"type":"object","additionalProperties":false,"required":["state"],"properties":{"state":{"type":"string","enum":["ON","OFF","TOGGLE"]}}}`
	lockSet       = `{"type":"object","additionalProperties":false,"required":["state"],"properties":{"state":{"type":"string","enum":["LOCK","UNLOCK"]}}}`
	garageSet     = `{"type":"object","additionalProperties":false,"minProperties":1,"properties":{"state":{"type":"string","enum":["OPEN","CLOSE","STOP"]},"position":{"type":"integer","minimum":0,"maximum":100}}}`
	thermoSet     = `{"type":"object","additionalProperties":false,"minProperties":1,"properties":{"occupied_heating_setpoint":{"type":"number","minimum":5,"maximum":30},"system_mode":{"type":"string","enum":["off","heat","auto"]}}}`
	notifyPhone   = `{"type":"object","additionalProperties":false,"required":["message"],"properties":{"message":{"type":"string","minLength":1},"title":{"type":"string"}}}`
)

// remoteActions is the demo remote's output schema: five buttons, each
// pressed once (its name), twice, three times, held and released.
var remoteActions = func() string {
	var vals []string
	for _, g := range []string{"", "_double", "_triple", "_hold", "_release"} {
		for _, b := range []string{"on", "off", "brightness_up", "brightness_down", "toggle"} {
			vals = append(vals, `"`+b+g+`"`)
		}
	}
	return `{"type":"string","enum":[` + strings.Join(vals, ",") + `]}`
}()

// demoCatalog mirrors the demo devices the guides' cookbook uses.
func demoCatalog() *mapCatalog {
	dev := func(id string) *pilotage.Entry { return entry(id, pilotage.KindDevice, pilotage.RiskRead, "", "") }
	st := func(id, out string) *pilotage.Entry { return entry(id, pilotage.KindState, pilotage.RiskRead, "", out) }
	return withGuideHelpers(newMapCatalog("demo-1",
		dev("hall_light"), dev("porch_light"), dev("hall_motion"), dev("front_door"), dev("front_lock"),
		dev("garage_door"), dev("living_plug"), dev("living_thermostat"), dev("bedroom_remote"), dev("outdoor_weather"), dev("notify"),
		entry("hall_light.set", pilotage.KindAction, pilotage.RiskControl, lightSet, ""),
		entry("porch_light.set", pilotage.KindAction, pilotage.RiskControl, onOffLightSet, ""),
		entry("living_plug.set", pilotage.KindAction, pilotage.RiskControl, plugSet, ""),
		entry("front_lock.set", pilotage.KindAction, pilotage.RiskSecurity, lockSet, ""),
		entry("garage_door.set", pilotage.KindAction, pilotage.RiskSecurity, garageSet, ""),
		entry("living_thermostat.set", pilotage.KindAction, pilotage.RiskControl, thermoSet, ""),
		entry("notify.phone", pilotage.KindAction, pilotage.RiskExternal, notifyPhone, ""),
		st("hall_light.state", onOff), st("hall_light.brightness", `{"type":"integer","minimum":0,"maximum":254}`),
		st("porch_light.state", onOff), // an on/off light: no brightness, as in the demo house
		st("hall_motion.occupancy", `{"type":"boolean"}`), st("hall_motion.illuminance", `{"type":"number","minimum":0,"unit":"lx"}`),
		st("front_door.contact", `{"type":"boolean","description":"true = closed"}`),
		st("front_lock.lock_state", `{"type":"string","enum":["locked","unlocked","not_fully_locked"]}`),
		st("garage_door.position", `{"type":"integer","minimum":0,"maximum":100}`),
		st("living_plug.state", onOff), st("living_plug.power", `{"type":"number","minimum":0,"unit":"W"}`),
		st("living_thermostat.local_temperature", `{"type":"number","unit":"°C"}`),
		st("living_thermostat.occupied_heating_setpoint", `{"type":"number","minimum":5,"maximum":30}`),
		st("living_thermostat.system_mode", `{"type":"string","enum":["off","heat","auto"]}`),
		st("outdoor_weather.temperature", `{"type":"number","unit":"°C"}`), st("outdoor_weather.humidity", `{"type":"number","minimum":0,"maximum":100}`),
		entry("bedroom_remote.action", pilotage.KindEvent, pilotage.RiskRead, "", remoteActions),
		entry("script.flash_porch", pilotage.KindAutomation, pilotage.RiskControl, `{"type":"object","properties":{"times":{"type":"integer","minimum":1,"maximum":10}}}`, ""),
	))
}
