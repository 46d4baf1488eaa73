package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
)

// z2mHouse is a Pilothouse behind MCP whose Zigbee2MQTT bridge is the
// test itself: it announces the device list (and changes it), reports
// states, and records the commands the house publishes.
type z2mHouse struct {
	*httpStack
	bus  *mqtt.Client
	mu   sync.Mutex
	sent []string // "<device> <payload>" of every command, in order
}

// z2mDev is one device of the bridge's list: a light, a lock or a
// motion sensor, in an area (set as Zigbee2MQTT users do: area:<x> in
// its description).
type z2mDev struct{ name, kind, area string }

func newZ2MHouse(t *testing.T, principals []*engine.Principal) *z2mHouse {
	return newZ2MHouseCfg(t, engine.Config{Principals: principals})
}

// newZ2MHouseCfg is newZ2MHouse with the engine configured by cfg.
func newZ2MHouseCfg(t *testing.T, cfg engine.Config) *z2mHouse {
	principals := cfg.Principals
	t.Helper()
	ctx := context.Background()
	h := &z2mHouse{httpStack: &httpStack{t: t, dir: t.TempDir()}}
	b, err := mqtt.StartBroker("127.0.0.1:0", quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	dial := func() *mqtt.Client {
		c, err := mqtt.Dial(ctx, mqtt.Options{Broker: b.URL(), Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	conn := dial()
	h.devs = devices.NewCatalog(devices.Options{Logger: quiet()})
	if err := h.devs.Start(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if h.store, err = storage.OpenWith(ctx, h.dir, storage.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.store.Close() })
	h.eng = engine.New(cfg, h.devs, h.store, quiet())
	if err := h.eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.eng.Close)
	h.bus = dial()
	err = h.bus.Subscribe("zigbee2mqtt/+/set", 0, func(m mqtt.Message) {
		dev := strings.TrimSuffix(strings.TrimPrefix(m.Topic, "zigbee2mqtt/"), "/set")
		h.mu.Lock()
		h.sent = append(h.sent, dev+" "+string(m.Payload))
		h.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	h.srv = mcpserver.New(h.eng, mcpserver.Options{Logger: quiet()})
	hs := httptest.NewServer(h.srv.HTTPHandler(mcpserver.HTTPOptions{Principals: principals}))
	t.Cleanup(hs.Close)
	h.url = hs.URL + "/mcp"
	return h
}

// announce publishes the bridge's device list and waits until the
// catalog holds exactly those devices.
func (h *z2mHouse) announce(devs ...z2mDev) {
	t := h.t
	t.Helper()
	var list []any
	for i, d := range devs {
		var expose any
		switch d.kind {
		case "light", "lock":
			on, off := "ON", "OFF"
			if d.kind == "lock" {
				on, off = "LOCK", "UNLOCK"
			}
			expose = map[string]any{"type": d.kind, "features": []any{map[string]any{"type": "binary", "name": "state", "property": "state", "access": 7, "value_on": on, "value_off": off}}}
		case "motion":
			expose = map[string]any{"type": "binary", "name": "occupancy", "property": "occupancy", "access": 1, "value_on": true, "value_off": false}
		}
		list = append(list, map[string]any{"ieee_address": fmt.Sprintf("0x%016x", 0xa1+16*i), "friendly_name": d.name,
			"type": "Router", "supported": true, "interview_completed": true, "description": "area:" + d.area,
			"definition": map[string]any{"model": "M-" + d.kind, "vendor": "V", "description": d.kind, "exposes": []any{expose}}})
	}
	b, _ := json.Marshal(list)
	if err := h.bus.Publish(context.Background(), "zigbee2mqtt/bridge/devices", b, 1, true); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the announced devices", func() bool {
		snap := h.devs.Snapshot()
		n := 0
		for _, e := range snap.Entries() {
			if e.Kind == "device" {
				n++
			}
		}
		for _, d := range devs { // in their areas: a list from the bus is read on its own goroutine
			if e, ok := snap.Get(d.name); !ok || !slices.Contains(e.Tags, "area:"+d.area) {
				return false
			}
		}
		return n == len(devs)
	})
}

// report publishes a device's state as Zigbee2MQTT does.
func (h *z2mHouse) report(dev, payload string) {
	h.t.Helper()
	if err := h.bus.Publish(context.Background(), "zigbee2mqtt/"+dev, []byte(payload), 1, false); err != nil {
		h.t.Fatal(err)
	}
}

// commands waits until the house has published n commands since from
// and returns those, sorted (a step's calls go out in id order, but the
// test does not depend on it).
func (h *z2mHouse) commands(from, n int) []string {
	h.t.Helper()
	var got []string
	testutil.Eventually(h.t, 10*time.Second, "the commands", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		got = slices.Clone(h.sent[from:])
		return len(got) >= n
	})
	slices.Sort(got)
	return got
}

func (h *z2mHouse) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sent)
}

const (
	areaOff = `{"name":"living-off","triggers":[{"id":"m","state":{"area":"hall","property":"occupancy"},"to":true}],
	  "steps":[{"id":"off","call":{"area":"living","type":"light","action":"set"},"args":{"state":"OFF"}}]}`
)

// TestAreaCallSurvivesDeviceSwap: a rule turns off every light in the
// living room when any motion sensor in the hall sees someone. One of the
// lights is replaced by another (a new Zigbee2MQTT device in the same
// area) and a second hall sensor joins: the rule, never redeployed,
// switches the new light and not the old one, and fires on the new
// sensor. The trace shows one call per light.
func TestAreaCallSurvivesDeviceSwap(t *testing.T) {
	h := newZ2MHouse(t, nil)
	owner := h.client("")
	h.announce(z2mDev{"lamp_a", "light", "living"}, z2mDev{"lamp_b", "light", "living"}, z2mDev{"hall_lamp", "light", "hall"},
		z2mDev{"pir_1", "motion", "hall"})
	v := validate(t, owner, areaOff)
	if ps := step(v["plan"], "off"); js(ps["calls"]) != `["lamp_a.set","lamp_b.set"]` || ps["risk"] != "control" {
		t.Fatalf("plan step: %s", js(v))
	}
	if r := deployOf(t, owner, areaOff); r["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("deploy: %s", js(r))
	}

	n := h.count()
	h.report("pir_1", `{"occupancy":false}`) // a first value: a baseline, never a change
	h.report("pir_1", `{"occupancy":true}`)
	if got := h.commands(n, 2); js(got) != `["lamp_a {\"state\":\"OFF\"}","lamp_b {\"state\":\"OFF\"}"]` {
		t.Fatalf("first firing sent %v", got)
	}
	var ids []string
	testutil.Eventually(t, 10*time.Second, "the firing's record", func() bool { ids = firingsOf(t, owner, "living-off"); return len(ids) == 1 })
	tr, _ := callTool(t, owner, "pilotage_trace", map[string]any{"run_id": ids[0]})
	if st := step(tr["trace"], "off"); js(st["calls"]) != `["lamp_a.set","lamp_b.set"]` || !strings.Contains(js(st["output"]), `"lamp_b.set":{"published":true}`) {
		t.Fatalf("trace step: %s", js(st))
	}

	// lamp_b is swapped for lamp_c; a second sensor joins the hall.
	h.announce(z2mDev{"lamp_a", "light", "living"}, z2mDev{"lamp_c", "light", "living"}, z2mDev{"hall_lamp", "light", "hall"},
		z2mDev{"pir_1", "motion", "hall"}, z2mDev{"pir_2", "motion", "hall"})
	n = h.count()
	h.report("pir_2", `{"occupancy":true}`) // its first value: no firing
	h.report("pir_2", `{"occupancy":false}`)
	h.report("pir_2", `{"occupancy":true}`)
	if got := h.commands(n, 2); js(got) != `["lamp_a {\"state\":\"OFF\"}","lamp_c {\"state\":\"OFF\"}"]` {
		t.Fatalf("after the swap the firing sent %v", got)
	}
	testutil.Eventually(t, 10*time.Second, "the second firing's record", func() bool { ids = firingsOf(t, owner, "living-off"); return len(ids) == 2 })
	tr, _ = callTool(t, owner, "pilotage_trace", map[string]any{"run_id": ids[0]})
	if !strings.Contains(js(tr), "pir_2.occupancy") {
		t.Fatalf("the trace does not say which sensor fired: %s", js(tr))
	}

	// pir_1 moves to the garage: it no longer fires the rule; pir_2,
	// reporting after it on the same connection, still does.
	h.announce(z2mDev{"lamp_a", "light", "living"}, z2mDev{"lamp_c", "light", "living"}, z2mDev{"hall_lamp", "light", "hall"},
		z2mDev{"pir_1", "motion", "garage"}, z2mDev{"pir_2", "motion", "hall"})
	h.report("pir_1", `{"occupancy":false}`)
	h.report("pir_1", `{"occupancy":true}`)
	h.report("pir_2", `{"occupancy":false}`)
	h.report("pir_2", `{"occupancy":true}`)
	testutil.Eventually(t, 10*time.Second, "the third firing's record", func() bool { ids = firingsOf(t, owner, "living-off"); return len(ids) >= 3 })
	h.eng.Flush()
	for _, id := range firingsOf(t, owner, "living-off") {
		tr, _ := callTool(t, owner, "pilotage_trace", map[string]any{"run_id": id})
		// The firings after the swap call lamp_c; none is pir_1's.
		if strings.Contains(js(tr), "because pir_1.occupancy") && strings.Contains(js(tr), "lamp_c.set") {
			t.Fatalf("a sensor moved out of the hall fired the rule: %s", js(tr))
		}
		// A sensor's first value is a baseline, not a change.
		if strings.Contains(js(tr), "changed from null") {
			t.Fatalf("a first value fired the rule: %s", js(tr))
		}
	}
}

// TestSelectorStaysInScope: a guest scoped to the living room calls
// every light (no area): only its own lights are switched, now and after
// lights join both inside and outside its scope; its plan and test run
// show only them.
func TestSelectorStaysInScope(t *testing.T) {
	h := newZ2MHouse(t, []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true, Admin: true},
		{Name: "guest", TokenHash: engine.HashToken("guest-token"), Deploy: true, Scope: engine.Scope{Areas: []string{"living"}}},
	})
	guest := h.client("guest-token")
	h.announce(z2mDev{"lamp_a", "light", "living"}, z2mDev{"hall_lamp", "light", "hall"}, z2mDev{"pir_l", "motion", "living"})
	const src = `{"name":"all-off","triggers":[{"id":"m","state":"pir_l.occupancy","to":false}],
	  "steps":[{"id":"off","call":{"type":"light","action":"set"},"args":{"state":"OFF"}}]}`
	if ps := step(validate(t, guest, src)["plan"], "off"); js(ps["calls"]) != `["lamp_a.set"]` {
		t.Fatalf("guest's plan step: %s", js(ps))
	}
	tr := execute(t, guest, map[string]any{"test_run": true, "program": prog(t, src)})
	if st := step(tr["trace"], "off"); js(st["calls"]) != `["lamp_a.set"]` {
		t.Fatalf("guest's test run: %s", js(tr))
	}
	if r := deployOf(t, guest, src); r["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("deploy: %s", js(r))
	}
	// Lights join in and out of the guest's scope after the deploy.
	h.announce(z2mDev{"lamp_a", "light", "living"}, z2mDev{"hall_lamp", "light", "hall"}, z2mDev{"pir_l", "motion", "living"},
		z2mDev{"lamp_d", "light", "living"}, z2mDev{"porch_lamp", "light", "porch"})
	n := h.count()
	h.report("pir_l", `{"occupancy":true}`)
	h.report("pir_l", `{"occupancy":false}`)
	if got := h.commands(n, 2); js(got) != `["lamp_a {\"state\":\"OFF\"}","lamp_d {\"state\":\"OFF\"}"]` {
		t.Fatalf("the guest's firing sent %v", got)
	}
	var ids []string
	testutil.Eventually(t, 10*time.Second, "the firing's record", func() bool { ids = firingsOf(t, guest, "all-off"); return len(ids) == 1 })
	out, _ := callTool(t, guest, "pilotage_trace", map[string]any{"run_id": ids[0]})
	if st := step(out["trace"], "off"); js(st["calls"]) != `["lamp_a.set","lamp_d.set"]` {
		t.Fatalf("the firing called %s", js(st))
	}
	if got := h.commands(n, 2); len(got) != 2 {
		t.Fatalf("commands out of scope: %v", got)
	}
}

// TestSelectorRiskAndArguments: a selector reaching a lock plans at the
// lock's risk and needs approval to deploy; one whose arguments a lock
// refuses is a located error naming the lock.
func TestSelectorRiskAndArguments(t *testing.T) {
	h := newZ2MHouseCfg(t, engine.Config{WebURL: "http://house.test:8080", Principals: []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true, Admin: true},
		{Name: "guest", TokenHash: engine.HashToken("guest-token"), Deploy: true},
		{Name: "keyholder", TokenHash: engine.HashToken("keyholder-token"), Deploy: true,
			Approval: &engine.ApprovalPolicy{PreApproved: []string{"door_lock.set"}}},
	}})
	guest := h.client("guest-token")
	h.announce(z2mDev{"lamp_a", "light", "living"}, z2mDev{"door_lock", "lock", "living"})
	const locks = `{"name":"lock-up","triggers":[{"id":"t","at":"23:00"}],
	  "steps":[{"id":"lock","call":{"area":"living","type":"lock","action":"set"},"args":{"state":"LOCK"}}]}`
	v := validate(t, guest, locks)
	if ps := step(v["plan"], "lock"); js(ps["calls"]) != `["door_lock.set"]` || ps["risk"] != "security" || v["plan"].(map[string]any)["max_risk"] != "security" ||
		js(ps["selector"]) != `{"action":"set","area":"living","type":"lock"}` {
		t.Fatalf("plan: %s", js(v["plan"]))
	}
	pending(t, deployOf(t, guest, locks))
	if _, err := h.eng.GetRule(engine.WithPrincipal(context.Background(), engine.Owner), "lock-up", 0); err == nil {
		t.Fatal("a selector reaching a lock was installed without approval")
	}
	// Pre-approving the lock covers a call to it by id, never a selector
	// that reaches it now (it may reach another lock later).
	keyholder := h.client("keyholder-token")
	byID := `{"name":"lock-one","triggers":[{"id":"t","at":"23:00"}],"steps":[{"id":"lock","call":"door_lock.set","args":{"state":"LOCK"}}]}`
	if r := deployOf(t, keyholder, byID); r["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("pre-approved lock by id: %s", js(r))
	}
	pending(t, deployOf(t, keyholder, strings.Replace(locks, "lock-up", "lock-all", 1)))
	// Lights accept OFF, the lock does not: the finding names the lock.
	const all = `{"name":"all","triggers":[{"id":"t","at":"23:00"}],
	  "steps":[{"id":"off","call":{"area":"living","action":"set"},"args":{"state":"OFF"}}]}`
	d := diagAt(validate(t, guest, all), "bad_arguments", "/steps/0/args/state")
	if d == nil || !strings.Contains(d["message"].(string), "door_lock.set") {
		t.Fatalf("want bad_arguments naming door_lock.set: %s", js(validate(t, guest, all)))
	}
}

// TestSelectorNeverPassesItsApprovedRisk: a rule by area was deployed when
// the living room held only a light (control, no approval asked); a lock
// that joins the room later is never called by it: the trace says why.
func TestSelectorNeverPassesItsApprovedRisk(t *testing.T) {
	h := newZ2MHouse(t, nil)
	owner := h.client("")
	h.announce(z2mDev{"lamp_a", "light", "living"}, z2mDev{"pir_1", "motion", "hall"})
	const src = `{"name":"room-off","triggers":[{"id":"m","state":"pir_1.occupancy","to":true}],
	  "steps":[{"id":"off","call":{"area":"living","action":"set"},"args":{"state":"OFF"},"continue_on_error":true}]}`
	if r := deployOf(t, owner, src); r["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("deploy: %s", js(r))
	}
	h.announce(z2mDev{"lamp_a", "light", "living"}, z2mDev{"pir_1", "motion", "hall"}, z2mDev{"door_lock", "lock", "living"}) // ieee addresses follow the order
	n := h.count()
	h.report("pir_1", `{"occupancy":false}`)
	h.report("pir_1", `{"occupancy":true}`)
	if got := h.commands(n, 1); js(got) != `["lamp_a {\"state\":\"OFF\"}"]` {
		t.Fatalf("the firing sent %v", got)
	}
	var ids []string
	testutil.Eventually(t, 10*time.Second, "the firing's record", func() bool { ids = firingsOf(t, owner, "room-off"); return len(ids) == 1 })
	tr, _ := callTool(t, owner, "pilotage_trace", map[string]any{"run_id": ids[0]})
	st := step(tr["trace"], "off")
	if !strings.Contains(js(st), `door_lock.set`) || !strings.Contains(js(st), "above the control this rule was deployed and approved at") {
		t.Fatalf("trace step does not say the lock was refused: %s", js(st))
	}
	// The stored trace's step failed on the lock, but lamp_a's call went
	// out: the narration says so (it said "It called nothing.").
	if n, _ := tr["narration"].(string); !strings.Contains(n, `It called lamp_a.set (step "off").`) {
		t.Errorf("narration: %s", n)
	}
	for _, c := range h.commands(n, 1) {
		if strings.HasPrefix(c, "door_lock") {
			t.Fatalf("the lock was called: %v", c)
		}
	}
}
