package engine

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotage"
)

// TestSelectorConditionReadsTheLiveCatalog: a condition over every
// occupancy sensor of the house (states({…}) and since({…})) reads the
// live catalog at each firing: the demo's motion sensor blocks the rule
// while it sees someone, and a sensor announced after the deploy counts
// without a redeploy.
func TestSelectorConditionReadsTheLiveCatalog(t *testing.T) {
	ctx := context.Background()
	h := newHouse(t, Config{})
	h.set("hall_motion", "occupancy", true)
	h.deploy(`{"name":"door-empty-house","mode":"queued","triggers":[{"id":"door","state":"front_door.contact","to":false}],
	  "conditions":[{"id":"empty","expr":"none(states({tag: 'class:occupancy'}), # == true)"}],
	  "steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)
	open := func(n int) string {
		t.Helper()
		h.set("front_door", "contact", true)
		h.set("front_door", "contact", false)
		var env string
		testutil.Eventually(t, 10*time.Second, "the door's firing", func() bool {
			runs := h.firings("door-empty-house")
			if len(runs) < n {
				return false
			}
			env = string(runs[0].Envelope)
			return true
		})
		return env
	}
	if env := open(1); !strings.Contains(env, "conditions_not_met") || !strings.Contains(env, "hall_motion.occupancy") {
		t.Fatalf("with the hall sensor seeing someone, the firing = %s", env)
	}
	h.set("hall_motion", "occupancy", false)
	if env := open(2); strings.Contains(env, "conditions_not_met") {
		t.Fatalf("with nobody seen, the firing = %s", env)
	}
	// A sensor announced after the deploy, in another room, from Home
	// Assistant discovery: its state is named after its entity.
	cfg := `{"name":"Attic presence","unique_id":"attic_pir_1","state_topic":"attic/pir","device_class":"occupancy",
	  "value_template":"{{ value_json.occupancy }}","payload_on":true,"payload_off":false,
	  "device":{"identifiers":["attic_pir"],"name":"Attic PIR","suggested_area":"Attic"}}`
	if err := h.client.Publish(ctx, "homeassistant/binary_sensor/attic_pir/occupancy/config", []byte(cfg), 1, true); err != nil {
		t.Fatal(err)
	}
	var id string
	testutil.Eventually(t, 10*time.Second, "the attic sensor in the catalog", func() bool {
		for _, e := range h.devs.Snapshot().Entries() {
			if strings.HasPrefix(e.ID, "attic_pir.") && e.Kind == pilotage.KindState {
				id = e.ID
				return true
			}
		}
		return false
	})
	// Retained: the catalog subscribes to the state's topic as it reads
	// the config, and a message before that would be missed.
	if err := h.client.Publish(ctx, "attic/pir", []byte(`{"occupancy":true}`), 1, true); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the attic sensor's value", func() bool {
		l, ok := h.devs.Live(id)
		return ok && l.Value == true
	})
	if env := open(3); !strings.Contains(env, "conditions_not_met") || !strings.Contains(env, id) {
		t.Fatalf("with the new sensor seeing someone, the firing = %s", env)
	}
}
