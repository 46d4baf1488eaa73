package devices

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotage"
)

func seedFiles(f *testing.F, match func(replayMsg) bool, add func(replayMsg)) {
	f.Helper()
	for _, m := range loadReplay(f) {
		if match(m) {
			add(m)
		}
	}
}

// checkSnapshot asserts invariants every snapshot must keep.
func checkSnapshot(t *testing.T, c *Catalog) {
	s := c.Snapshot()
	prev := ""
	for _, e := range s.Entries() {
		if e.ID <= prev {
			t.Fatalf("entries not sorted/unique at %q", e.ID)
		}
		prev = e.ID
		if e.Revision == "" || s.Hash(e.ID) != e.Revision {
			t.Fatalf("%s: revision/hash mismatch", e.ID)
		}
		if e.Callable != pilotage.KindCallable(e.Kind) || (e.Callable && len(e.InputSchema) == 0) {
			t.Fatalf("%s: callable/input_schema inconsistent", e.ID)
		}
		if strings.ContainsAny(e.ID, "#/ ") {
			t.Fatalf("%s: unsafe id", e.ID)
		}
	}
	// The device id table: every id belongs to one key, which holds it
	// (cur) or keeps it reserved (kept), never both; one held id per key.
	c.mu.RLock()
	defer c.mu.RUnlock()
	n := len(c.ids.Cur)
	for k, id := range c.ids.Cur {
		if r, ok := c.ids.ByID[id]; !ok || r.Key != k || !r.Left.IsZero() {
			t.Fatalf("id table: %s holds %s, which is %+v", k, id, r)
		}
	}
	for k, ids := range c.ids.Kept {
		n += len(ids)
		for _, id := range ids {
			if r, ok := c.ids.ByID[id]; !ok || r.Key != k || r.Left.IsZero() {
				t.Fatalf("id table: %s keeps %s, which is %+v", k, id, r)
			}
		}
	}
	if n != len(c.ids.ByID) {
		t.Fatalf("id table: %d ids held or kept, %d assigned", n, len(c.ids.ByID))
	}
	if kept := n - len(c.ids.Cur); kept != c.ids.NKept {
		t.Fatalf("id table: %d ids kept, counted %d", kept, c.ids.NKept)
	}
}

func FuzzZ2MDevices(f *testing.F) {
	f.Add([]byte(bridgeTwo))
	f.Add([]byte(`[{"ieee_address":"0x1","friendly_name":"x","definition":{"exposes":[{"type":"composite","property":"c","access":7,"features":[{"type":"numeric","property":"a","access":2}]}]}}]`))
	f.Add([]byte(`not json`))
	seedFiles(f, func(m replayMsg) bool {
		return strings.HasSuffix(m.Topic, "bridge/devices") || strings.HasSuffix(m.Topic, "bridge/event")
	},
		func(m replayMsg) { f.Add(m.msg.Payload) })
	// One device per expose shape of the Zigbee2MQTT library, and the rows.
	for _, d := range loadZHC(f, zhcDir+"/devices.json") {
		f.Add([]byte("[" + string(d.raw) + "]"))
	}
	if b, err := os.ReadFile("testdata/z2m_rows.json"); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		c, _ := newTestCatalog()
		c.HandleMessage(msg("zigbee2mqtt/bridge/devices", string(payload)))
		c.HandleMessage(msg("zigbee2mqtt/bridge/event", string(payload)))
		for _, e := range c.Snapshot().Entries() {
			if e.Kind == pilotage.KindDevice {
				c.HandleMessage(msg("zigbee2mqtt/"+e.Name, string(payload)))
				c.HandleMessage(msg("zigbee2mqtt/"+e.Name, `{"state":"ON","brightness":1,"action":"x"}`))
				c.HandleMessage(msg("zigbee2mqtt/"+e.Name+"/availability", string(payload)))
			}
		}
		checkSnapshot(t, c)
	})
}

// FuzzZ2MGroups: whatever bridge/groups holds, the catalog stays sound;
// a list it refuses changes nothing and is counted, and every group
// it accepts with members is a device whose set action is at least as
// risky as each member's.
func FuzzZ2MGroups(f *testing.F) {
	f.Add([]byte(testutil.Z2MGroups(testutil.Z2MGroup(1, "lights", "0x11", "0x12"), testutil.Z2MGroup(2, "door", "0x10", "0x11"),
		testutil.Z2MGroup(3, "ghost", "0x99"), testutil.Z2MGroup(4, "empty"))))
	f.Add([]byte(`[{"id":1,"friendly_name":"a/b","members":[{"ieee_address":"0x11","endpoint":11},{"ieee_address":"0x11","endpoint":12}]}]`))
	f.Add([]byte(`[{"id":1,"friendly_name":"hall","members":[{"ieee_address":"0x11"}]}]`)) // a group named as a device
	seedFiles(f, func(m replayMsg) bool { return strings.HasSuffix(m.Topic, "bridge/groups") }, func(m replayMsg) { f.Add(m.msg.Payload) })
	devs := testutil.Z2MBridge(testutil.Z2MLock("0x10", "frontlock"), testutil.Z2MLight("0x11", "hall"), testutil.Z2MLight("0x12", "den"))
	f.Fuzz(func(t *testing.T, payload []byte) {
		c, _ := newTestCatalog()
		c.HandleMessage(msg("zigbee2mqtt/bridge/devices", devs))
		before := c.Snapshot()
		c.HandleMessage(msg("zigbee2mqtt/bridge/groups", string(payload)))
		after := c.Snapshot()
		if c.Refusals().Z2MGroupListsRefused > 0 && after != before {
			t.Fatal("a refused group list changed the catalog")
		}
		for _, e := range after.Entries() {
			if e.Kind == pilotage.KindDevice && hasTag(e, "group") {
				c.HandleMessage(msg("zigbee2mqtt/"+e.Name, `{"state":"ON","brightness":1}`))
				c.HandleMessage(msg("zigbee2mqtt/"+e.Name+"/availability", "online"))
			}
		}
		checkSnapshot(t, c)
		for _, e := range after.Entries() {
			if e.Kind == pilotage.KindDevice && hasTag(e, "group") && strings.Contains(e.Description, "frontlock") && !strings.Contains(e.Description, " — ") { // no description of its own
				if set, ok := after.Get(e.ID + ".set"); ok && set.Risk != pilotage.RiskSecurity {
					t.Fatalf("%s holds the lock at risk %s", set.ID, set.Risk)
				}
			}
		}
	})
}

func FuzzHADiscovery(f *testing.F) {
	f.Add("homeassistant/light/kitchen/config", []byte(`{"~":"k","cmd_t":"~/set","stat_t":"~/state","schema":"json","name":null,"dev":{"ids":"1","name":"K"}}`))
	f.Add("homeassistant/device/x/config", []byte(`{"dev":{"ids":"x"},"cmps":{"a":{"p":"sensor","stat_t":"s","val_tpl":"{{ value_json.a | float | round(1) }}"}}}`))
	seedFiles(f, func(m replayMsg) bool { return strings.HasPrefix(m.Topic, "homeassistant/") },
		func(m replayMsg) { f.Add(m.Topic, m.msg.Payload) })
	// Our own variants: device-based with full keys and a node id, Homie
	// "$" topics, availability lists, Jinja climate and command templates.
	if b, err := os.ReadFile("testdata/ha/variants.json"); err == nil {
		var vs []struct {
			Topic   string `json:"topic"`
			Payload any    `json:"payload"`
		}
		if json.Unmarshal(b, &vs) == nil {
			for _, v := range vs {
				p, _ := json.Marshal(v.Payload)
				f.Add(v.Topic, p)
			}
		}
	}
	f.Fuzz(func(t *testing.T, topic string, payload []byte) {
		c, _ := newTestCatalog()
		c.HandleMessage(msg(topic, string(payload)))
		c.mu.RLock()
		topics := make([]string, 0, len(c.model.routes))
		for tp := range c.model.routes {
			topics = append(topics, tp)
		}
		c.mu.RUnlock()
		for _, tp := range topics {
			c.HandleMessage(msg(tp, string(payload)))
			c.HandleMessage(msg(tp, `{"state":"ON","value":1}`))
			c.HandleMessage(msg(tp, `ON`))
		}
		checkSnapshot(t, c)
		c.HandleMessage(msg(topic, ""))
		checkSnapshot(t, c)
	})
}
