package model

import "strings"

// Z2MClasses is the one table of what a Zigbee2MQTT property measures or
// detects, named as Home Assistant's device_class names it (the names
// Zigbee2MQTT's own Home Assistant discovery gives them): a state entry
// of such a property carries the tag "class:<x>", so a catalog param can
// require, say, a motion sensor ("tag": "class:occupancy") and refuse a
// door contact ("class:door") of the same binary_sensor type.
var Z2MClasses = map[string]string{
	"occupancy":         "occupancy",
	"presence":          "presence",
	"contact":           "door",
	"water_leak":        "moisture",
	"smoke":             "smoke",
	"gas":               "gas",
	"carbon_monoxide":   "carbon_monoxide",
	"vibration":         "vibration",
	"tamper":            "tamper",
	"battery_low":       "battery",
	"temperature":       "temperature",
	"local_temperature": "temperature",
	"humidity":          "humidity",
	"pressure":          "pressure",
	"illuminance":       "illuminance",
	"illuminance_lux":   "illuminance",
	"power":             "power",
	"energy":            "energy",
	"voltage":           "voltage",
	"current":           "current",
	"battery":           "battery",
	"co2":               "carbon_dioxide",
	"pm25":              "pm25",
	"pm10":              "pm10",
	"voc":               "volatile_organic_compounds",
	"formaldehyd":       "volatile_organic_compounds",
}

// HAClass is a Home Assistant device_class as a tag value: lower case,
// nothing that is not a letter, digit or underscore ("" when none).
func HAClass(dc string) string {
	dc = strings.ToLower(strings.TrimSpace(dc))
	if dc == "" || len(dc) > 40 || strings.ContainsFunc(dc, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		return ""
	}
	return dc
}
