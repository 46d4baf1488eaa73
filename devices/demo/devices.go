package demo

import (
	"maps"
	"strings"
)

// Access bits of a Zigbee2MQTT expose.
const (
	accessPublished = 1
	accessSettable  = 2
	accessReadable  = 4
	accessAll       = accessPublished | accessSettable | accessReadable
)

// expose is one entry of a Zigbee2MQTT definition's "exposes", in the shape
// Zigbee2MQTT 2.x publishes it on bridge/devices.
type expose struct {
	Type        string   `json:"type"`
	Name        string   `json:"name,omitempty"`
	Label       string   `json:"label,omitempty"`
	Property    string   `json:"property,omitempty"`
	Access      int      `json:"access,omitempty"`
	Category    string   `json:"category,omitempty"`
	Description string   `json:"description,omitempty"`
	Unit        string   `json:"unit,omitempty"`
	ValueOn     any      `json:"value_on,omitempty"`
	ValueOff    any      `json:"value_off,omitempty"`
	ValueToggle any      `json:"value_toggle,omitempty"`
	ValueMin    *float64 `json:"value_min,omitempty"`
	ValueMax    *float64 `json:"value_max,omitempty"`
	ValueStep   *float64 `json:"value_step,omitempty"`
	Values      []string `json:"values,omitempty"`
	Features    []expose `json:"features,omitempty"`

	integer bool // numeric values are whole numbers (brightness, position)
}

func label(name string) string {
	s := strings.ReplaceAll(name, "_", " ")
	return strings.ToUpper(s[:1]) + s[1:]
}

func binary(name string, access int, on, off any, desc string) expose {
	return expose{Type: "binary", Name: name, Label: label(name), Property: name, Access: access,
		ValueOn: on, ValueOff: off, Description: desc}
}

func numeric(name string, access int, unit, desc string) expose {
	return expose{Type: "numeric", Name: name, Label: label(name), Property: name, Access: access, Unit: unit, Description: desc}
}

func (e expose) rng(lo, hi float64) expose { e.ValueMin, e.ValueMax = &lo, &hi; return e }
func (e expose) step(s float64) expose     { e.ValueStep = &s; return e }
func (e expose) whole() expose             { e.integer = true; return e }
func (e expose) cat(c string) expose       { e.Category = c; return e }
func (e expose) toggle(v any) expose       { e.ValueToggle = v; return e }

func enum(name string, access int, desc string, values ...string) expose {
	return expose{Type: "enum", Name: name, Label: label(name), Property: name, Access: access, Values: values, Description: desc}
}

func composite(typ string, features ...expose) expose {
	return expose{Type: typ, Features: features}
}

func battery() expose {
	return numeric("battery", accessPublished, "%", "Remaining battery in %, can take up to 24 hours before reported").rng(0, 100).whole().cat("diagnostic")
}

func linkquality() expose {
	return numeric("linkquality", accessPublished, "lqi", "Link quality (signal strength)").rng(0, 255).whole().cat("diagnostic")
}

func identify() expose {
	return enum("identify", accessSettable, "Initiate device identification", "identify").cat("config")
}

// device is one simulated Zigbee2MQTT device.
type device struct {
	name         string
	area         string // announced as "area:<x>" in the Zigbee2MQTT description
	ieee         string
	nwk          int
	typ          string // Router or EndDevice
	kind         string // light, switch, lock, cover, climate, sensor, remote: drives command side effects
	vendor       string
	model        string
	description  string
	manufacturer string
	modelID      string
	power        string
	clusters     []string
	exposes      []expose
	state        map[string]any
	// drawLevel is the draw a plug's noise varies around: the one set
	// last (0: its usual 62 W).
	drawLevel float64
	props     map[string]*expose // flattened exposes by property
}

func (d *device) index() {
	d.props = map[string]*expose{}
	var walk func(es []expose)
	walk = func(es []expose) {
		for i := range es {
			if es[i].Property != "" {
				d.props[es[i].Property] = &es[i]
			}
			walk(es[i].Features)
		}
	}
	walk(d.exposes)
	for k, v := range d.state { // numbers are float64, as if decoded from JSON
		if n, ok := v.(int); ok {
			d.state[k] = float64(n)
		}
	}
}

func (d *device) snapshot() map[string]any { return maps.Clone(d.state) }

// remoteButtons are bedroom_remote's five buttons; remoteGestures what a
// press of one can be. Like Aqara and Tuya multi-press remotes, the
// action names the button and the gesture ("toggle_double"); a single
// press is the button's name alone ("toggle"), as on IKEA remotes.
var (
	remoteButtons  = []string{"on", "off", "brightness_up", "brightness_down", "toggle"}
	remoteGestures = []string{"", "_double", "_triple", "_hold", "_release"}
	remoteActions  = remoteActionList()
)

func remoteActionList() []string {
	var out []string
	for _, g := range remoteGestures {
		for _, b := range remoteButtons {
			out = append(out, b+g)
		}
	}
	return out
}

const remoteName = "bedroom_remote"

// demoDevices returns the simulated house in its initial state.
func demoDevices() []*device {
	ds := []*device{
		{
			name: "hall_light", area: "hall", ieee: "0x000b57fffe1a2b3c", nwk: 11011, typ: "Router", kind: "light",
			vendor: "IKEA", model: "LED1836G9", description: "TRADFRI bulb E26/E27, white, 806 lm",
			manufacturer: "IKEA of Sweden", modelID: "TRADFRI bulb E27 WW 806lm", power: "Mains (single phase)",
			clusters: []string{"genBasic", "genIdentify", "genGroups", "genScenes", "genOnOff", "genLevelCtrl"},
			exposes: []expose{
				composite("light",
					binary("state", accessAll, "ON", "OFF", "On/off state of this light").toggle("TOGGLE"),
					numeric("brightness", accessAll, "", "Brightness of this light").rng(0, 254).whole()),
				enum("power_on_behavior", accessAll, "Controls the behavior when the device is powered on after power loss",
					"off", "on", "toggle", "previous").cat("config"),
				identify(), linkquality(),
			},
			state: map[string]any{"state": "OFF", "brightness": 128, "power_on_behavior": "previous", "linkquality": 142},
		},
		{
			name: "porch_light", area: "porch", ieee: "0x00124b0024c1d2e3", nwk: 22022, typ: "Router", kind: "light",
			vendor: "Pilothouse", model: "PH-L1", description: "On/off light (simulated)",
			manufacturer: "Pilothouse", modelID: "PH-L1", power: "Mains (single phase)",
			clusters: []string{"genBasic", "genIdentify", "genGroups", "genScenes", "genOnOff"},
			exposes: []expose{
				composite("light", binary("state", accessAll, "ON", "OFF", "On/off state of this light").toggle("TOGGLE")),
				linkquality(),
			},
			state: map[string]any{"state": "OFF", "linkquality": 118},
		},
		{
			name: "hall_motion", area: "hall", ieee: "0x0017880106f2a3b5", nwk: 33033, typ: "EndDevice", kind: "sensor",
			vendor: "Philips", model: "9290012607", description: "Hue motion sensor",
			manufacturer: "Signify Netherlands B.V.", modelID: "SML001", power: "Battery",
			clusters: []string{"genBasic", "genPowerCfg", "genIdentify", "msOccupancySensing", "msIlluminanceMeasurement"},
			exposes: []expose{
				binary("occupancy", accessPublished, true, false, "Indicates whether the device detected occupancy"),
				numeric("illuminance", accessPublished|accessReadable, "lx", "Measured illuminance. 0 = too low to be measured").whole(),
				battery(), linkquality(),
			},
			state: map[string]any{"occupancy": false, "illuminance": 120, "battery": 87, "linkquality": 90},
		},
		{
			name: "front_door", area: "hall", ieee: "0x00158d0005a1b2c4", nwk: 44044, typ: "EndDevice", kind: "sensor",
			vendor: "Aqara", model: "MCCGQ11LM", description: "Door and window sensor",
			manufacturer: "LUMI", modelID: "lumi.sensor_magnet.aq2", power: "Battery",
			clusters: []string{"genBasic", "genIdentify", "genOnOff"},
			exposes: []expose{
				battery(),
				// Aqara style: contact true means closed, so value_on is false.
				binary("contact", accessPublished, false, true, "Indicates if the contact is closed (= true) or open (= false)"),
				linkquality(),
			},
			state: map[string]any{"contact": true, "battery": 91, "linkquality": 105},
		},
		{
			name: "front_lock", area: "hall", ieee: "0x000d6f0011223345", nwk: 55055, typ: "EndDevice", kind: "lock",
			vendor: "Yale", model: "YRD226HA2619", description: "Assure lock",
			manufacturer: "Yale", modelID: "YRD226 TSDB", power: "Battery",
			clusters: []string{"genBasic", "genPowerCfg", "genIdentify", "closuresDoorLock"},
			exposes: []expose{
				composite("lock",
					binary("state", accessAll, "LOCK", "UNLOCK", "State of the lock"),
					enum("lock_state", accessPublished, "Actual state of the lock", "not_fully_locked", "locked", "unlocked")),
				battery(), linkquality(),
			},
			state: map[string]any{"state": "LOCK", "lock_state": "locked", "battery": 76, "linkquality": 98},
		},
		{
			name: "garage_door", area: "garage", ieee: "0xa4c138f0e1d2c3b4", nwk: 60606, typ: "Router", kind: "cover",
			vendor: "Pilothouse", model: "PH-GD1", description: "Garage door opener (simulated)",
			manufacturer: "Pilothouse", modelID: "PH-GD1", power: "Mains (single phase)",
			clusters: []string{"genBasic", "genIdentify", "closuresWindowCovering"},
			exposes: []expose{
				composite("cover",
					enum("state", accessPublished|accessSettable, "", "OPEN", "CLOSE", "STOP"),
					numeric("position", accessAll, "%", "Position of this cover").rng(0, 100).whole()),
				linkquality(),
			},
			state: map[string]any{"state": "CLOSE", "position": 0, "linkquality": 120},
		},
		{
			name: "living_plug", area: "living", ieee: "0xa4c1380b1cd2e3f5", nwk: 17017, typ: "Router", kind: "switch",
			vendor: "Tuya", model: "TS011F_plug_1", description: "Smart plug (with power monitoring)",
			manufacturer: "_TZ3000_cphmq0q7", modelID: "TS011F", power: "Mains (single phase)",
			clusters: []string{"genBasic", "genIdentify", "genOnOff", "seMetering", "haElectricalMeasurement"},
			exposes: []expose{
				composite("switch", binary("state", accessAll, "ON", "OFF", "On/off state of the switch").toggle("TOGGLE")),
				numeric("power", accessPublished, "W", "Instantaneous measured power"),
				numeric("energy", accessPublished, "kWh", "Sum of consumed energy"),
				linkquality(),
			},
			state: map[string]any{"state": "ON", "power": 62.4, "energy": 148.62, "linkquality": 172},
		},
		{
			name: "living_thermostat", area: "living", ieee: "0x0014490000112234", nwk: 28028, typ: "EndDevice", kind: "climate",
			vendor: "Pilothouse", model: "PH-TRV1", description: "Radiator thermostat (simulated)",
			manufacturer: "Pilothouse", modelID: "PH-TRV1", power: "Battery",
			clusters: []string{"genBasic", "genPowerCfg", "genIdentify", "hvacThermostat"},
			exposes: []expose{
				composite("climate",
					numeric("occupied_heating_setpoint", accessAll, "°C", "Temperature setpoint").rng(5, 30).step(0.5),
					numeric("local_temperature", accessPublished|accessReadable, "°C", "Current temperature measured on the device"),
					enum("system_mode", accessAll, "Mode of this device", "off", "heat", "auto"),
					enum("running_state", accessPublished|accessReadable, "The current running state", "idle", "heat")),
				battery(), linkquality(),
			},
			state: map[string]any{"occupied_heating_setpoint": 21.0, "local_temperature": 19.5, "system_mode": "heat",
				"running_state": "heat", "battery": 68, "linkquality": 112},
		},
		{
			name: remoteName, area: "bedroom", ieee: "0x000b57fffe8c9d0f", nwk: 29029, typ: "EndDevice", kind: "remote",
			vendor: "Pilothouse", model: "PH-R5", description: "Five-button remote: single, double and triple presses, hold and release (simulated)",
			manufacturer: "Pilothouse", modelID: "PH-R5", power: "Battery",
			clusters: []string{"genBasic", "genPowerCfg", "genIdentify"},
			exposes: []expose{
				enum("action", accessPublished, "Triggered action (e.g. a button click)", remoteActions...).cat("diagnostic"),
				battery(), linkquality(),
			},
			state: map[string]any{"battery": 74, "linkquality": 94},
		},
	}
	for _, d := range ds {
		d.index()
	}
	return ds
}

// bridgeDevice is one element of <base>/bridge/devices (Zigbee2MQTT 2.x).
type bridgeDevice struct {
	Definition         *definition         `json:"definition,omitempty"`
	Description        string              `json:"description,omitempty"`
	Disabled           bool                `json:"disabled"`
	Endpoints          map[string]endpoint `json:"endpoints"`
	FriendlyName       string              `json:"friendly_name"`
	IEEEAddress        string              `json:"ieee_address"`
	InterviewCompleted bool                `json:"interview_completed"`
	InterviewState     string              `json:"interview_state"`
	Interviewing       bool                `json:"interviewing"`
	Manufacturer       string              `json:"manufacturer,omitempty"`
	ModelID            string              `json:"model_id,omitempty"`
	NetworkAddress     int                 `json:"network_address"`
	PowerSource        string              `json:"power_source,omitempty"`
	Supported          bool                `json:"supported"`
	Type               string              `json:"type"`
}

type definition struct {
	Description string   `json:"description"`
	Exposes     []expose `json:"exposes"`
	Model       string   `json:"model"`
	Options     []expose `json:"options"`
	Source      string   `json:"source"`
	SupportsOTA bool     `json:"supports_ota"`
	Vendor      string   `json:"vendor"`
}

type endpoint struct {
	Bindings             []any    `json:"bindings"`
	Clusters             clusters `json:"clusters"`
	ConfiguredReportings []any    `json:"configured_reportings"`
	Scenes               []any    `json:"scenes"`
}

type clusters struct {
	Input  []string `json:"input"`
	Output []string `json:"output"`
}

func newEndpoint(in []string) endpoint {
	if in == nil {
		in = []string{}
	}
	return endpoint{Bindings: []any{}, Clusters: clusters{Input: in, Output: []string{"genOta"}},
		ConfiguredReportings: []any{}, Scenes: []any{}}
}

const coordinatorIEEE = "0x00124b002b4c5d6f"

func coordinatorEntry() bridgeDevice {
	return bridgeDevice{
		Endpoints:          map[string]endpoint{"1": newEndpoint(nil), "242": newEndpoint(nil)},
		FriendlyName:       "Coordinator",
		IEEEAddress:        coordinatorIEEE,
		InterviewCompleted: true,
		InterviewState:     "SUCCESSFUL",
		Supported:          true,
		Type:               "Coordinator",
	}
}

func (d *device) bridgeEntry() bridgeDevice {
	return bridgeDevice{
		Definition: &definition{Description: d.description, Exposes: d.exposes, Model: d.model,
			Options: []expose{}, Source: "native", Vendor: d.vendor},
		Description:        "area:" + d.area, // the user's description in Zigbee2MQTT: how a device gets its area
		Endpoints:          map[string]endpoint{"1": newEndpoint(d.clusters)},
		FriendlyName:       d.name,
		IEEEAddress:        d.ieee,
		InterviewCompleted: true,
		InterviewState:     "SUCCESSFUL",
		Manufacturer:       d.manufacturer,
		ModelID:            d.modelID,
		NetworkAddress:     d.nwk,
		PowerSource:        d.power,
		Supported:          true,
		Type:               d.typ,
	}
}
