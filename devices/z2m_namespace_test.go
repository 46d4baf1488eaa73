package devices

import (
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotage"
)

// TestZ2MNamespaceTopicNamesNoDevice: an attacker on the bus announced
// harmless switches whose command topics lay inside Zigbee2MQTT's base
// topic under a name Pilothouse did not map to the lock (round 19): its
// IEEE address, a group holding it, the bridge's requests. A guest denied
// security could call each without approval. Now the address maps to its
// device, and any other name there is shown at security, saying why; a
// known light's address keeps the light's risk.
func TestZ2MNamespaceTopicNamesNoDevice(t *testing.T) {
	cases := []struct {
		name, topic string
		risk        pilotage.Risk
		reason      string // in the description ("" for none raised)
	}{
		{"the lock's IEEE address", "zigbee2mqtt/0x00124b00000000aa/set", pilotage.RiskSecurity,
			"its command topic zigbee2mqtt/0x00124b00000000aa/set is also written by an action of risk security"},
		{"a property of the lock's IEEE address", "zigbee2mqtt/0x00124b00000000aa/set/state", pilotage.RiskSecurity,
			"reaches zigbee2mqtt/0x00124b00000000aa/set, which an action of risk security also writes"},
		{"a group holding the lock", "zigbee2mqtt/locks/set", pilotage.RiskSecurity,
			"its command topic zigbee2mqtt/locks/set is inside Zigbee2MQTT's zigbee2mqtt/ and names no device Pilothouse knows (a group, an address, or the bridge's requests can reach any device)"},
		{"an unknown endpoint of a group", "zigbee2mqtt/locks/l1/set", pilotage.RiskSecurity, "names no device Pilothouse knows"},
		{"the bridge's device removal", "zigbee2mqtt/bridge/request/device/remove", pilotage.RiskSecurity,
			"Zigbee2MQTT's bridge requests manage the whole network"},
		{"the bridge's permit_join", "zigbee2mqtt/bridge/request/permit_join", pilotage.RiskSecurity,
			"Zigbee2MQTT's bridge requests manage the whole network"},
		{"the light's IEEE address", "zigbee2mqtt/0x00124b00000000bb/set", pilotage.RiskControl, ""},
		{"the light's endpoint by address", "zigbee2mqtt/0x00124b00000000bb/l1/set", pilotage.RiskControl, ""},
		{"the light's name", "zigbee2mqtt/hall/set/brightness", pilotage.RiskControl, ""},
		{"outside Zigbee2MQTT's base", "home/plug_x/set", pilotage.RiskControl, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := runHouse(t, overTCP(Options{}))
			h.send(t, "zigbee2mqtt/bridge/devices", testutil.Z2MBridge(testutil.Z2MLock("0x00124b00000000aa", "frontlock"),
				testutil.Z2MLight("0x00124b00000000bb", "hall")), true)
			waitEntry(t, h.c, "frontlock.set")
			h.publish(t, "homeassistant/switch/plug_x/config", switchConfig(tc.topic), "plug_x.set")
			waitRisk(t, h.c, "plug_x.set", tc.risk)
			sw, _ := h.c.Snapshot().Get("plug_x.set")
			if tc.reason == "" && strings.Contains(sw.Description, "Risk raised") {
				t.Errorf("the switch = %q, want no raise", sw.Description)
			}
			if !strings.Contains(sw.Description, tc.reason) || sw.RiskHints != pilotage.HintsOf(tc.risk) {
				t.Errorf("the switch = %+v, want %s saying %q", sw, tc.risk, tc.reason)
			}
			for id, want := range map[string]pilotage.Risk{"frontlock.set": pilotage.RiskSecurity, "hall.set": pilotage.RiskControl} {
				if e, _ := h.c.Snapshot().Get(id); e.Risk != want || strings.Contains(e.Description, "Risk raised") {
					t.Errorf("%s = %+v, want its own %s", id, e, want)
				}
			}
		})
	}
}

// TestZ2MNamespaceRealHouseKeepsRisks: the real Zigbee2MQTT house with
// the discovery configs Zigbee2MQTT published for its own devices (replay
// up to seq 180, before another installation's device list replaces it):
// no action there names a device Pilothouse does not know; only the
// bridge's own requests (permit_join, restart, options, OTA updates) are
// raised.
func TestZ2MNamespaceRealHouseKeepsRisks(t *testing.T) {
	c, clk := newTestCatalog()
	replayUntil(c, clk, loadReplay(t), 180)
	bridge := 0
	for _, e := range c.Snapshot().Entries() {
		switch {
		case strings.Contains(e.Description, "names no device Pilothouse knows"):
			t.Errorf("%s raised: %s", e.ID, e.Description)
		case strings.Contains(e.Description, "bridge requests manage the whole network"):
			bridge++
		}
	}
	if bridge == 0 {
		t.Error("no bridge request raised")
	}
}
