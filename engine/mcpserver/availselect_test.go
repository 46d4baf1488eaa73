package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// availability publishes a Zigbee2MQTT device's availability, retained.
func (h *z2mHouse) availability(dev string, online bool) {
	h.t.Helper()
	state := "offline"
	if online {
		state = "online"
	}
	if err := h.bus.Publish(context.Background(), "zigbee2mqtt/"+dev+"/availability", []byte(`{"state":"`+state+`"}`), 1, true); err != nil {
		h.t.Fatal(err)
	}
}

// TestAvailableBySelector: "any hall sensor offline" is one available
// trigger by selector: the plan says what it addresses, a test run holds
// each device on its own through the timeline, and the deployed rule
// fires for a sensor that joined the hall after it was deployed, naming
// that sensor (trigger.entity) and why.
func TestAvailableBySelector(t *testing.T) {
	h := newZ2MHouse(t, nil)
	owner := h.client("")
	h.announce(z2mDev{"lamp_a", "light", "living"}, z2mDev{"pir_1", "motion", "hall"})
	const held = `{"name":"hall-gone-held","triggers":[{"id":"gone","available":{"area":"hall","property":"occupancy"},"to":false,"for":"10m"}],
	  "steps":[{"id":"on","call":"lamp_a.set","args":{"state":"ON"}}]}`
	v := validate(t, owner, held)
	if d, _ := step(v["plan"], "gone")["description"].(string); !strings.Contains(d, `"occupancy" of any device in area "hall"`) ||
		!strings.Contains(d, "pir_1.occupancy") || !strings.Contains(d, "(each device on its own)") {
		t.Fatalf("trigger description %q: %s", d, js(v))
	}
	for _, tc := range []struct{ timeline, want, why string }{
		{`[{"at": "5m", "available": {"pir_1.occupancy": true}}]`, "not_triggered", "pir_1.occupancy's device came back online at +5m"},
		{`[]`, "success", "pir_1.occupancy's device was offline from the start and held for 10m"},
	} {
		in := map[string]any{"scenario": prog(t, `{"timeline": `+tc.timeline+`}`)}
		out := call(t, owner, "pilotage_execute", map[string]any{"test_run": true, "program": prog(t, held), "input": in})
		if status(out) != tc.want || !strings.Contains(js(out), tc.why) {
			t.Errorf("timeline %s: want %s and %q: %s", tc.timeline, tc.want, tc.why, js(out))
		}
	}

	const gone = `{"name":"hall-gone","mode":"parallel","triggers":[{"id":"gone","available":{"area":"hall","property":"occupancy"},"to":false}],
	  "steps":[{"id":"on","call":"lamp_a.set","args":{"state":"ON"}},{"id":"who","set":{"who":"{{ trigger.entity }}"}}]}`
	if r := deployOf(t, owner, gone); r["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("deploy: %s", js(r))
	}
	// pir_2 joins the hall after the deploy; its first report is a baseline.
	h.announce(z2mDev{"lamp_a", "light", "living"}, z2mDev{"pir_1", "motion", "hall"}, z2mDev{"pir_2", "motion", "hall"})
	h.availability("pir_2", true)
	testutil.Eventually(t, 10*time.Second, "pir_2 online", func() bool {
		l, _ := h.devs.Live("pir_2.occupancy")
		return l.Available != nil && *l.Available
	})
	n := h.count()
	h.availability("pir_2", false)
	if got := h.commands(n, 1); len(got) != 1 || !strings.HasPrefix(got[0], "lamp_a ") {
		t.Fatalf("commands %v", got)
	}
	var ids []string
	testutil.Eventually(t, 10*time.Second, "the firing's record", func() bool { ids = firingsOf(t, owner, "hall-gone"); return len(ids) == 1 })
	tr, _ := callTool(t, owner, "pilotage_trace", map[string]any{"run_id": ids[0]})
	if s := js(tr); !strings.Contains(s, "pir_2.occupancy's device went offline") || !strings.Contains(s, `"who":"pir_2.occupancy"`) {
		t.Errorf("the firing's trace does not name pir_2: %s", s)
	}
}

// TestAvailableBySelectorHoldsEachDevice: a held available trigger by
// selector holds each device on its own, live: a sensor back online
// within the hold ends only its own window, one that stays offline fires
// once, naming itself.
func TestAvailableBySelectorHoldsEachDevice(t *testing.T) {
	h := newZ2MHouse(t, nil)
	owner := h.client("")
	h.announce(z2mDev{"lamp_a", "light", "living"}, z2mDev{"pir_1", "motion", "hall"}, z2mDev{"pir_2", "motion", "hall"})
	const held = `{"name":"hall-gone-held","mode":"parallel","triggers":[{"id":"gone","available":{"area":"hall","property":"occupancy"},"to":false,"for":"3s"}],
	  "steps":[{"id":"on","call":"lamp_a.set","args":{"state":"ON"}},{"id":"who","set":{"who":"{{ trigger.entity }}"}}]}`
	if r := deployOf(t, owner, held); r["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("deploy: %s", js(r))
	}
	for _, dev := range []string{"pir_1", "pir_2"} {
		h.availability(dev, true) // first reports: baselines
		testutil.Eventually(t, 10*time.Second, dev+" online", func() bool {
			l, _ := h.devs.Live(dev + ".occupancy")
			return l.Available != nil && *l.Available
		})
	}
	n := h.count()
	h.availability("pir_1", false)
	h.availability("pir_1", true) // back within the hold: its window ends
	h.availability("pir_2", false)
	h.commands(n, 1)
	var ids []string
	testutil.Eventually(t, 10*time.Second, "the firing's record", func() bool { ids = firingsOf(t, owner, "hall-gone-held"); return len(ids) >= 1 })
	h.eng.Flush()
	// pir_1's window, had it stayed open, was due before pir_2's.
	if ids = firingsOf(t, owner, "hall-gone-held"); len(ids) != 1 {
		t.Fatalf("%d firings, want pir_2's only", len(ids))
	}
	tr, _ := callTool(t, owner, "pilotage_trace", map[string]any{"run_id": ids[0]})
	if s := js(tr); !strings.Contains(s, "pir_2.occupancy's device went offline and held for 3s") || !strings.Contains(s, `"who":"pir_2.occupancy"`) {
		t.Errorf("the firing's trace does not name pir_2: %s", s)
	}
}
