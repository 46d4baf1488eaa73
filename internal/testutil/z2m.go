package testutil

import (
	"strconv"
	"strings"
)

// The Zigbee2MQTT devices the tests' houses are made of, as entries of a
// bridge/devices payload: one definition each, so every package's house
// has the same light, motion sensor and lock.

// Z2MLight is a dimmable bulb (state ON/OFF/TOGGLE, brightness 0–254).
func Z2MLight(ieee, name string) string {
	return `{"ieee_address":"` + ieee + `","type":"Router","friendly_name":"` + name + `","supported":true,
  "definition":{"vendor":"Philips","model":"X1","description":"Bulb","exposes":[
   {"type":"light","features":[
    {"type":"binary","name":"state","property":"state","access":7,"value_on":"ON","value_off":"OFF","value_toggle":"TOGGLE"},
    {"type":"numeric","name":"brightness","property":"brightness","access":7,"value_min":0,"value_max":254}]}]}}`
}

// Z2MMotion is a motion sensor with an illuminance reading.
func Z2MMotion(ieee, name string) string {
	return `{"ieee_address":"` + ieee + `","type":"EndDevice","friendly_name":"` + name + `","supported":true,
  "definition":{"vendor":"Aqara","model":"M1","description":"Motion","exposes":[
   {"type":"binary","name":"occupancy","property":"occupancy","access":1,"value_on":true,"value_off":false},
   {"type":"numeric","name":"illuminance","property":"illuminance","access":1,"unit":"lx"}]}}`
}

// Z2MLock is a door lock (LOCK/UNLOCK).
func Z2MLock(ieee, name string) string {
	return `{"ieee_address":"` + ieee + `","type":"EndDevice","friendly_name":"` + name + `","supported":true,
  "definition":{"vendor":"Yale","model":"YRD","description":"Assure lock","exposes":[
   {"type":"lock","features":[
    {"type":"binary","name":"state","property":"state","access":7,"value_on":"LOCK","value_off":"UNLOCK"}]}]}}`
}

// Z2MPlug is a smart plug (a switch: state ON/OFF/TOGGLE).
func Z2MPlug(ieee, name string) string {
	return `{"ieee_address":"` + ieee + `","type":"Router","friendly_name":"` + name + `","supported":true,
  "definition":{"vendor":"IKEA","model":"E1603","description":"Control outlet","exposes":[
   {"type":"switch","features":[
    {"type":"binary","name":"state","property":"state","access":7,"value_on":"ON","value_off":"OFF","value_toggle":"TOGGLE"}]}]}}`
}

// Z2MValve is a water valve: a switch by its exposes, a valve (security)
// by its description.
func Z2MValve(ieee, name string) string {
	return `{"ieee_address":"` + ieee + `","type":"EndDevice","friendly_name":"` + name + `","supported":true,
  "definition":{"vendor":"Tuya","model":"TS0001_valve","description":"Water valve","exposes":[
   {"type":"switch","features":[
    {"type":"binary","name":"state","property":"state","access":7,"value_on":"ON","value_off":"OFF","value_toggle":"TOGGLE"}]}]}}`
}

// Z2MGroup is an entry of a bridge/groups payload: group id, its name and
// its members' IEEE addresses (endpoint 1 each).
func Z2MGroup(id int, name string, members ...string) string {
	ms := make([]string, len(members))
	for i, m := range members {
		ms[i] = `{"ieee_address":"` + m + `","endpoint":1}`
	}
	return `{"id":` + strconv.Itoa(id) + `,"friendly_name":"` + name + `","members":[` + strings.Join(ms, ",") + `],"scenes":[]}`
}

// Z2MGroups is a bridge/groups payload.
func Z2MGroups(groups ...string) string { return "[" + strings.Join(groups, ",\n ") + "]" }

// Z2MBridge is a bridge/devices payload: the coordinator, then devices.
func Z2MBridge(devices ...string) string {
	coordinator := `{"ieee_address":"0x01","type":"Coordinator","friendly_name":"Coordinator","definition":null}`
	return "[\n " + strings.Join(append([]string{coordinator}, devices...), ",\n ") + "\n]"
}
