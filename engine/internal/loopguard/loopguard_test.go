package loopguard

import (
	"testing"
	"time"
)

// TestDepthOf: a change within Window of a command to its device, or on
// the command's topic (or the state topic a Zigbee2MQTT set comes back
// on), is one hop deeper than the commanding firing; anything else is 0.
func TestDepthOf(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var c Chains
	c.Wrote("plug.set", "zigbee2mqtt/plug/set", 3, at)
	c.Wrote("lamp.set", "zigbee2mqtt/lamp/set/brightness", 5, at)
	c.Wrote("hook.call", "", 7, at)
	for _, tc := range []struct {
		name, id, topic string
		after           time.Duration
		want            int
	}{
		{"same device", "plug.state", "", time.Second, 4},
		{"state topic of a set", "ha_power.state", "zigbee2mqtt/plug", time.Second, 4},
		{"state topic of an attribute set", "ha_lamp.brightness", "zigbee2mqtt/lamp", 0, 6},
		{"command topic itself", "other.state", "zigbee2mqtt/lamp/set/brightness", 0, 6},
		{"no topic, device only", "hook.fired", "", Window, 8},
		{"after the window", "plug.state", "zigbee2mqtt/plug", Window + time.Millisecond, 0},
		{"another device", "sensor.state", "zigbee2mqtt/sensor", 0, 0},
		{"empty topic matches no topic mark", "sensor.state", "", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.DepthOf(tc.id, tc.topic, at.Add(tc.after)); got != tc.want {
				t.Fatalf("DepthOf(%q, %q) = %d, want %d", tc.id, tc.topic, got, tc.want)
			}
		})
	}
	var empty Chains
	if got := empty.DepthOf("plug.state", "zigbee2mqtt/plug", at); got != 0 {
		t.Fatalf("nothing written: depth %d", got)
	}
}
