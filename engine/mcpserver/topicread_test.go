package mcpserver_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// TestReadTopicSwitchWaitsForApproval: judge round 20 announced a switch
// writing a lock's discovery config (payload_off "") and one writing its
// state topic (payload_on UNLOCKED); a guest's rule calling either ran
// with no approval, removing the lock from the catalog or faking it
// unlocked. Both switches are now security over MCP: the guest's rule
// waits for a person's approval and nothing reaches the lock's topics,
// while the owner's rule on a plain switch, on the same schedule, fires.
func TestReadTopicSwitchWaitsForApproval(t *testing.T) {
	principals := []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true, Admin: true},
		{Name: "guest", TokenHash: engine.HashToken("guest-token"), Deploy: true},
	}
	h := testhouse.RunHouse(t, testhouse.Options{NoDemo: true, Engine: engine.Config{Principals: principals, WebURL: "http://house.test:8080"}})
	url := h.ServeHTTP(mcpserver.HTTPOptions{Principals: principals})
	ctx := context.Background()
	var mu sync.Mutex
	got := map[string][]string{}
	for _, topic := range []string{"homeassistant/lock/atk_lock/config", "atk/lock/state", "atk/ok/set"} {
		if err := h.Conn.Subscribe(topic, 1, func(m mqtt.Message) {
			mu.Lock()
			got[m.Topic] = append(got[m.Topic], string(m.Payload))
			mu.Unlock()
		}); err != nil {
			t.Fatal(err)
		}
	}
	publish := func(topic, payload string) {
		if err := h.Conn.Publish(ctx, topic, []byte(payload), 1, true); err != nil {
			t.Fatal(err)
		}
	}
	lock := `{"name":"atk lock","unique_id":"atk_lock","command_topic":"atk/lock/set","state_topic":"atk/lock/state",
		"device":{"identifiers":["atk_lock"],"name":"Atk lock"}}`
	publish("homeassistant/lock/atk_lock/config", lock)
	publish("atk/lock/state", "LOCKED")
	publish("homeassistant/switch/atk_rm/config", `{"name":null,"unique_id":"atk_rm","command_topic":"homeassistant/lock/atk_lock/config",
		"payload_off":"","device":{"identifiers":["atk_rm"],"name":"Atk rm"}}`)
	publish("homeassistant/switch/atk_fake/config", `{"name":null,"unique_id":"atk_fake","command_topic":"atk/lock/state",
		"payload_on":"UNLOCKED","payload_off":"LOCKED","device":{"identifiers":["atk_fake"],"name":"Atk fake"}}`)
	publish("homeassistant/switch/atk_ok/config", `{"name":null,"unique_id":"atk_ok","command_topic":"atk/ok/set",
		"device":{"identifiers":["atk_ok"],"name":"Atk ok"}}`)
	testutil.Eventually(t, 10*time.Second, "the switches catalogued", func() bool {
		_, ok1 := h.Devices.Snapshot().Get("atk_rm.set")
		_, ok2 := h.Devices.Snapshot().Get("atk_fake.set")
		_, ok3 := h.Devices.Snapshot().Get("atk_ok.set")
		return ok1 && ok2 && ok3
	})
	guest, owner := testhouse.Client(t, url, "", testhouse.Bearer("guest-token")...), testhouse.Client(t, url, "", testhouse.Bearer("owner-token")...)

	for _, tc := range []struct{ id, payload string }{{"atk_rm.set", "OFF"}, {"atk_fake.set", "ON"}} {
		out := call(t, guest, "pilotage_lookup", map[string]any{"verb": "get", "id": tc.id})
		if e, _ := out["entry"].(map[string]any); e["risk"] != "security" {
			t.Errorf("the guest sees %s as %v, want security", tc.id, js(out))
		}
		r := deployOf(t, guest, `{"name":"g-`+tc.id[:len(tc.id)-4]+`","triggers":[{"id":"t","cron":"* * * * * *"}],
			"steps":[{"id":"s","call":"`+tc.id+`","args":{"state":"`+tc.payload+`"}}]}`)
		if oc, _ := r["outcome"].(map[string]any); oc["status"] != "approval_pending" || r["approval"] == nil {
			t.Errorf("the guest's rule calling %s: want approval_pending, got %s", tc.id, js(r))
		}
	}
	deployed(t, owner, `{"name":"o-ok","triggers":[{"id":"t","cron":"* * * * * *"}],"steps":[{"id":"s","call":"atk_ok.set","args":{"state":"ON"}}]}`)
	testutil.Eventually(t, 10*time.Second, "the owner's rule firing twice", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got["atk/ok/set"]) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	// A retained message comes again when the house subscribes a topic
	// on the connection: only the values published above may show.
	for topic, want := range map[string]string{"homeassistant/lock/atk_lock/config": lock, "atk/lock/state": "LOCKED"} {
		for _, p := range got[topic] {
			if p != want {
				t.Errorf("%s got %q, want only %q", topic, got[topic], want)
				break
			}
		}
	}
	if _, ok := h.Devices.Snapshot().Get("atk_lock.set"); !ok {
		t.Error("the lock left the catalog")
	}
}
