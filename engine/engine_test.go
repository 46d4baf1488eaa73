package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

const motionLight = `{"name":"hall-motion-light","mode":"restart",
 "triggers":[{"id":"motion","state":"hall_motion.occupancy","to":true}],
 "steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON","brightness":180}}]}`

func TestDeployFiresOnMotion(t *testing.T) {
	h := newHouse(t, Config{})
	cmds := h.watch("zigbee2mqtt/hall_light/set")
	dep := h.deploy(motionLight)
	out := dep.Output.(*pilotage.DeployOutput)
	if out.Rule != "hall-motion-light" || len(out.Triggers) != 1 || out.Triggers[0].Entity != "hall_motion.occupancy" {
		t.Fatalf("deploy output: %+v", out)
	}
	if err := h.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": true}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(h.t, 5*time.Second, "the light command", func() bool { return cmds.count() > 0 })
	if got := cmds.last(); got["state"] != "ON" || got["brightness"] != float64(180) {
		t.Fatalf("command = %v", got)
	}
	testutil.Eventually(h.t, 5*time.Second, "the firing record", func() bool { return len(h.firings("hall-motion-light")) > 0 })
	run := h.firings("hall-motion-light")[0]
	if run.Status != rules.StatusSuccess || !run.OK {
		t.Fatalf("firing: %s %v %s", run.Status, run.OK, run.Envelope)
	}
	tr, err := h.eng.Trace(context.Background(), TraceRequest{RunID: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, s := range tr.Trace.Steps {
		ids = append(ids, s.ID)
	}
	if strings.Join(ids, ",") != "triggers,motion,on" {
		t.Fatalf("trace ids = %v", ids)
	}
	if err := rules.CheckCorrespondence(h.eng.body(out.ProgramRef).DecodedPlan(), tr.Trace.Steps, tr.Outcome); err != nil {
		t.Fatalf("plan–trace correspondence: %v", err)
	}
	// Motion going false does not fire (to: true).
	n := cmds.count()
	_ = h.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": false})
	testutil.Eventually(h.t, 5*time.Second, "the state to settle", func() bool {
		l, _ := h.devs.Live("hall_motion.occupancy")
		return l.Value == false
	})
	h.eng.Flush()
	if cmds.count() != n {
		t.Fatalf("a false occupancy fired the rule")
	}
}

func TestConditionsNotMetIsRecorded(t *testing.T) {
	h := newHouse(t, Config{})
	h.deploy(`{"name":"dark-only","triggers":[{"id":"m","state":"hall_motion.occupancy","to":true}],
	 "conditions":[{"id":"dark","expr":"state('hall_motion.illuminance') < -1000"}],
	 "steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)
	_ = h.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": true})
	testutil.Eventually(h.t, 5*time.Second, "the firing", func() bool { return len(h.firings("dark-only")) > 0 })
	if r := h.firings("dark-only")[0]; r.Status != rules.StatusConditionsNotMet || !r.OK {
		t.Fatalf("got %s ok=%v", r.Status, r.OK)
	}
}

func TestTestRunHasNoSideEffect(t *testing.T) {
	h := newHouse(t, Config{})
	cmds := h.watch("zigbee2mqtt/#")
	testutil.Eventually(h.t, 5*time.Second, "retained messages", func() bool { return cmds.count() > 0 })
	before := cmds.count()
	resp := h.execute(ExecuteRequest{Program: json.RawMessage(`{"name":"blink","triggers":[{"id":"t","cron":"0 0 * * * *"}],
	 "steps":[{"id":"loop","repeat":{"count":3},"do":[{"id":"toggle","call":"porch_light.set","args":{"state":"TOGGLE"}},{"id":"pause","delay":"10m"}]}]}`), TestRun: true})
	if !resp.Outcome.OK {
		t.Fatalf("test run: %+v", resp.Outcome)
	}
	var ids []string
	for _, s := range resp.Trace.Steps {
		ids = append(ids, s.ID)
	}
	want := "triggers,t,loop,toggle#1,pause#1,toggle#2,pause#2,toggle#3,pause#3"
	if strings.Join(ids, ",") != want {
		t.Fatalf("ids = %v, want %s", ids, want)
	}
	rules, _ := h.eng.ListRules(context.Background(), 0)
	if len(rules) != 0 {
		t.Fatalf("a test run installed a rule")
	}
	h.eng.Flush()
	if strings.Contains(strings.Join(cmds.topicsSince(before), " "), "porch_light/set") {
		t.Fatal("a test run published a command")
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

func TestCatalogVersionIgnoresStateAndTracksShape(t *testing.T) {
	h := newHouse(t, Config{})
	ctx := context.Background()
	v0 := h.eng.cat.View(Owner).Version()
	_ = h.sim.Trigger(ctx, "hall_motion", map[string]any{"illuminance": 3})
	testutil.Eventually(h.t, 5*time.Second, "the reading", func() bool {
		l, _ := h.devs.Live("hall_motion.illuminance")
		return l.Value == float64(3)
	})
	if v := h.eng.cat.View(Owner).Version(); v != v0 {
		t.Fatal("a sensor reading changed catalog_version")
	}
	if err := h.sim.Rename("porch_light", "porch_lamp"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(h.t, 5*time.Second, "the rename", func() bool { _, ok := h.devs.Snapshot().Get("porch_lamp.set"); return ok })
	resp, err := h.eng.Lookup(ctx, LookupRequest{Verb: "changed_since", CatalogVersion: v0})
	if err != nil {
		t.Fatal(err)
	}
	ch := resp.(*ChangedResponse)
	if ch.CatalogVersion == v0 {
		t.Fatal("version did not move on a rename")
	}
	kinds := map[string]string{}
	for _, c := range ch.Changes {
		kinds[c.ID] = c.Change
	}
	if kinds["porch_light.set"] != "removed" || kinds["porch_lamp.set"] != "added" || kinds["hall_light.set"] != "" {
		t.Fatalf("changes = %v", ch.Changes)
	}
	_, err = h.eng.Lookup(ctx, LookupRequest{Verb: "changed_since", CatalogVersion: "cv1-never"})
	var re *pilotage.RequestError
	if !errors.As(err, &re) || re.Kind != pilotage.ErrUnknownBaseline {
		t.Fatalf("unknown baseline: %v", err)
	}
}

func TestPromotionAndDrift(t *testing.T) {
	h := newHouse(t, Config{})
	dep := h.deploy(motionLight)
	ref := dep.Output.(*pilotage.DeployOutput).ProgramRef
	// The promoted program is a catalog entry with the body's risk.
	got, err := h.eng.Lookup(context.Background(), LookupRequest{Verb: "get", ID: ref})
	if err != nil {
		t.Fatal(err)
	}
	en := got.(*GetResponse).Entry
	if en.Kind != pilotage.KindAutomation || en.RiskHints.ReadOnly || en.Risk != pilotage.RiskControl {
		t.Fatalf("automation entry: %+v", en)
	}
	// Re-deploying the exact body by reference works.
	if r := h.execute(ExecuteRequest{ProgramRef: ref}); !r.Outcome.OK {
		t.Fatalf("redeploy by ref: %+v", r.Outcome)
	}
	// A stale catalog token is drift, nothing happens.
	if r := h.execute(ExecuteRequest{ProgramRef: ref, ExpectedCatalogVersion: "cv1-old"}); r.Outcome.Status != rules.StatusCatalogDrift {
		t.Fatalf("drift: %+v", r.Outcome)
	}
	// The hall light vanishes: the ref is promotion_drift, the rule broken.
	if err := h.sim.Remove("hall_light"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(h.t, 5*time.Second, "removal", func() bool { _, ok := h.devs.Snapshot().Get("hall_light.set"); return !ok })
	if r := h.execute(ExecuteRequest{ProgramRef: ref}); r.Outcome.Status != rules.StatusPromotionDrift {
		t.Fatalf("promotion drift: %+v", r.Outcome)
	}
	_ = h.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": true})
	testutil.Eventually(h.t, 5*time.Second, "the broken firing", func() bool { return len(h.firings("hall-motion-light")) > 0 })
	if r := h.firings("hall-motion-light")[0]; r.Status != rules.StatusBroken {
		t.Fatalf("firing status %s", r.Status)
	}
	ri, err := h.eng.GetRule(context.Background(), "hall-motion-light", 1)
	if err != nil || ri.Status != "broken" {
		t.Fatalf("rule status %q (%v)", ri.Status, err)
	}
}

func TestIdempotency(t *testing.T) {
	h := newHouse(t, Config{})
	a := h.execute(ExecuteRequest{Program: json.RawMessage(motionLight), IdempotencyKey: "k"})
	b := h.execute(ExecuteRequest{Program: json.RawMessage(motionLight), IdempotencyKey: "k"})
	if a.RunID != b.RunID {
		t.Fatalf("replay ran again: %s vs %s", a.RunID, b.RunID)
	}
	_, err := h.eng.Execute(context.Background(), ExecuteRequest{Program: json.RawMessage(strings.Replace(motionLight, "180", "90", 1)), IdempotencyKey: "k"})
	var re *pilotage.RequestError
	if !errors.As(err, &re) || re.Kind != pilotage.ErrConflict {
		t.Fatalf("conflict: %v", err)
	}
	// A refused run is never recorded for replay.
	refused := h.execute(ExecuteRequest{Program: json.RawMessage(motionLight), IdempotencyKey: "k2", ExpectedCatalogVersion: "cv1-stale"})
	if refused.Outcome.Status != rules.StatusCatalogDrift {
		t.Fatalf("drift: %+v", refused.Outcome)
	}
	if r := h.execute(ExecuteRequest{Program: json.RawMessage(motionLight), IdempotencyKey: "k2"}); !r.Outcome.OK || r.RunID == refused.RunID {
		t.Fatalf("after a refused run the key must execute afresh: %+v", r)
	}
}

func TestIdempotencyConcurrent(t *testing.T) {
	h := newHouse(t, Config{})
	prog := strings.ReplaceAll(motionLight, "hall-motion-light", "concurrent")
	ids := make(chan string, 8)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := h.eng.Execute(context.Background(), ExecuteRequest{Program: json.RawMessage(prog), IdempotencyKey: "same"})
			if err == nil {
				ids <- r.RunID
			}
		}()
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != 1 {
		t.Fatalf("one key executed %d times: %v", len(seen), seen)
	}
}

func TestRestartRearmsRules(t *testing.T) {
	h := newHouse(t, Config{})
	cmds := h.watch("zigbee2mqtt/hall_light/set")
	h.deploy(motionLight)
	h.stop()
	h.start()
	rl, err := h.eng.ListRules(context.Background(), 0)
	if err != nil || len(rl) != 1 || rl[0].Status != "enabled" {
		t.Fatalf("after restart: %+v %v", rl, err)
	}
	_ = h.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": true})
	testutil.Eventually(h.t, 5*time.Second, "a firing after restart", func() bool { return cmds.count() > 0 })
}

func TestDisableStopsFiring(t *testing.T) {
	h := newHouse(t, Config{})
	ctx := context.Background()
	cmds := h.watch("zigbee2mqtt/hall_light/set")
	h.deploy(motionLight)
	if _, err := h.eng.SetRuleEnabled(ctx, "hall-motion-light", false); err != nil {
		t.Fatal(err)
	}
	_ = h.sim.Trigger(ctx, "hall_motion", map[string]any{"occupancy": true})
	testutil.Eventually(h.t, 5*time.Second, "the state", func() bool { l, _ := h.devs.Live("hall_motion.occupancy"); return l.Value == true })
	h.eng.Flush()
	if cmds.count() != 0 || len(h.firings("hall-motion-light")) != 0 {
		t.Fatal("a disabled rule fired")
	}
	if _, err := h.eng.RemoveRule(ctx, "hall-motion-light"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.eng.GetRule(ctx, "hall-motion-light", 0); !errors.Is(err, ErrRuleNotFound) {
		t.Fatalf("after remove: %v", err)
	}
}

func TestGuestScopeIsIndistinguishable(t *testing.T) {
	guest := &Principal{Name: "guest", TokenHash: HashToken("g"), Scope: Scope{DenyTypes: []string{"lock", "cover"}, DenyDevices: []string{"notify"}}}
	owner := &Principal{Name: "owner", TokenHash: HashToken("o"), Deploy: true}
	h := newHouse(t, Config{Principals: []*Principal{owner, guest}})
	gctx := WithPrincipal(context.Background(), guest)
	prog := func(id string) json.RawMessage {
		return json.RawMessage(`{"name":"x","triggers":[{"id":"t","cron":"0 0 * * * *"}],"steps":[{"id":"s","call":"` + id + `","args":{"state":"LOCK"}}]}`)
	}
	invisible, err := h.eng.Validate(gctx, prog("front_lock.set"), nil)
	if err != nil {
		t.Fatal(err)
	}
	missing, err := h.eng.Validate(gctx, prog("front_lokk.set"), nil)
	if err != nil {
		t.Fatal(err)
	}
	a := strings.ReplaceAll(string(mustJSON(invisible)), "front_lock", "NAME")
	b := strings.ReplaceAll(string(mustJSON(missing)), "front_lokk", "NAME")
	if a != b {
		t.Fatalf("invisible and missing differ:\n%s\n%s", a, b)
	}
	if strings.Contains(string(mustJSON(missing)), "front_lock") {
		t.Fatal("a hint leaked the invisible lock")
	}
	_, e1 := h.eng.Lookup(gctx, LookupRequest{Verb: "get", ID: "front_lock.set"})
	_, e2 := h.eng.Lookup(gctx, LookupRequest{Verb: "get", ID: "front_lokk.set"})
	if strings.ReplaceAll(e1.Error(), "front_lock", "NAME") != strings.ReplaceAll(e2.Error(), "front_lokk", "NAME") {
		t.Fatalf("lookup errors differ: %v / %v", e1, e2)
	}
	// An owner's change to an invisible entry leaves the guest's version alone.
	gv := h.eng.cat.View(guest).Version()
	ov := h.eng.cat.View(owner).Version()
	if err := h.sim.Rename("front_lock", "front_door_lock"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(h.t, 5*time.Second, "rename", func() bool { _, ok := h.devs.Snapshot().Get("front_door_lock.set"); return ok })
	if h.eng.cat.View(owner).Version() == ov {
		t.Fatal("owner version did not move")
	}
	if h.eng.cat.View(guest).Version() != gv {
		t.Fatal("guest version moved on an invisible change")
	}
	// A guest may not deploy.
	r, err := h.eng.Execute(gctx, ExecuteRequest{Program: json.RawMessage(strings.ReplaceAll(motionLight, "hall-motion-light", "g"))})
	if err != nil || r.Outcome.Status != rules.StatusDenied {
		t.Fatalf("guest deploy: %+v %v", r, err)
	}
}

func TestStoreAndTraceLevels(t *testing.T) {
	h := newHouse(t, Config{})
	ctx := context.Background()
	prog := json.RawMessage(`{"name":"porch","triggers":[{"id":"t","cron":"0 0 20 * * *"}],"steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}}]}`)
	no := false
	yes := true
	cases := []struct {
		name       string
		store      *bool
		level      string
		fetchable  bool
		inlineNone bool
	}{
		{"store absent: retention governs", nil, "", true, false},
		{"store false: never retained", &no, "", false, false},
		{"store true with level none: retained at full", &yes, "none", true, true},
		{"summary inline", nil, "summary", true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := h.execute(ExecuteRequest{Program: prog, TestRun: true, Store: tc.store, TraceLevel: tc.level})
			if !r.Outcome.OK || r.RunID == "" {
				t.Fatalf("run: %+v", r)
			}
			if tc.inlineNone != (r.Trace == nil) {
				t.Fatalf("inline trace present=%v", r.Trace != nil)
			}
			if tc.level == "summary" {
				if r.Trace.Level != "summary" || r.Trace.Steps[len(r.Trace.Steps)-1].Input != nil {
					t.Fatalf("summary trace: %+v", r.Trace)
				}
			}
			got, err := h.eng.Trace(ctx, TraceRequest{RunID: r.RunID})
			if tc.fetchable {
				if err != nil || got.Trace.Level != "full" || len(got.Trace.Steps) == 0 {
					t.Fatalf("fetch: %+v %v", got, err)
				}
				sum, err := h.eng.Trace(ctx, TraceRequest{RunID: r.RunID, TraceLevel: "summary"})
				if err != nil || sum.Trace.Level != "summary" {
					t.Fatalf("fetch summary: %+v %v", sum, err)
				}
				return
			}
			var re *pilotage.RequestError
			if !errors.As(err, &re) || re.Kind != pilotage.ErrNotFound {
				t.Fatalf("store:false run fetched: %v", err)
			}
		})
	}
	// Expired runs are the same not_found.
	r := h.execute(ExecuteRequest{Program: prog, TestRun: true})
	h.eng.cfg.Now = func() time.Time { return time.Now().Add(31 * 24 * time.Hour) }
	defer func() { h.eng.cfg.Now = time.Now }()
	_, err := h.eng.Trace(ctx, TraceRequest{RunID: r.RunID})
	var re *pilotage.RequestError
	if !errors.As(err, &re) || re.Kind != pilotage.ErrNotFound || re.Message != "no retained run with that run_id" {
		t.Fatalf("expired run: %v", err)
	}
}

func TestBrokerRestartStateFlowsAgain(t *testing.T) {
	h := newHouse(t, Config{})
	addr := h.broker.Addr()
	if err := h.broker.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(h.t, 5*time.Second, "the client to notice", func() bool { return !h.client.Connected() })
	var err error
	h.broker, err = mqtt.StartBroker(addr, quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.broker.Close() })
	testutil.Eventually(h.t, 15*time.Second, "the reconnect", func() bool { return h.client.Connected() })
	testutil.Eventually(h.t, 10*time.Second, "a state change after the restart", func() bool {
		_ = h.sim.Trigger(context.Background(), "hall_motion", map[string]any{"illuminance": 777})
		l, _ := h.devs.Live("hall_motion.illuminance")
		return l.Value == float64(777)
	})
}

func TestCallPromotedAutomation(t *testing.T) {
	h := newHouse(t, Config{})
	script := h.deploy(`{"name":"porch-blink","params":{"type":"object","properties":{"times":{"type":"integer","minimum":1,"maximum":5,"default":2}}},
	 "triggers":[{"id":"nightly","at":"03:00"}],
	 "steps":[{"id":"blink","repeat":{"count":"{{ params.times }}"},"do":[{"id":"toggle","call":"porch_light.set","args":{"state":"TOGGLE"}}]}]}`)
	ref := script.Output.(*pilotage.DeployOutput).ProgramRef
	caller := `{"name":"door-greeting","triggers":[{"id":"opened","state":"front_door.contact","to":false}],
	 "steps":[{"id":"greet","call":"` + ref + `","args":{"times":3}}]}`
	val, err := h.eng.Validate(context.Background(), json.RawMessage(caller), nil)
	if err != nil || !val.Valid {
		t.Fatalf("validate: %+v %v", val, err)
	}
	var greet *pilotage.PlanStep
	for i := range val.Plan.Steps {
		if val.Plan.Steps[i].ID == "greet" {
			greet = &val.Plan.Steps[i]
		}
	}
	if greet == nil || len(greet.Calls) != 1 || greet.Calls[0] != ref || greet.Risk != pilotage.RiskControl {
		t.Fatalf("plan step of the call: %+v", greet)
	}
	r := h.execute(ExecuteRequest{Program: json.RawMessage(caller), TestRun: true})
	if !r.Outcome.OK {
		t.Fatalf("test run: %+v", r.Outcome)
	}
	var ids []string
	for _, s := range r.Trace.Steps {
		ids = append(ids, s.ID)
	}
	got := strings.Join(ids, ",")
	want := "triggers,opened,greet,greet/blink,greet/toggle#1,greet/toggle#2,greet/toggle#3"
	if got != want {
		t.Fatalf("expanded trace ids:\n got %s\nwant %s", got, want)
	}
	if err := rules.CheckCorrespondence(val.Plan, r.Trace.Steps, r.Outcome); err != nil {
		t.Fatal(err)
	}
	// Deployed, a real firing runs the script's body against the devices.
	cmds := h.watch("zigbee2mqtt/porch_light/set")
	h.deploy(caller)
	_ = h.sim.Trigger(context.Background(), "front_door", map[string]any{"contact": false})
	testutil.Eventually(h.t, 5*time.Second, "three toggles", func() bool { return cmds.count() >= 3 })
}

// TestStorageStatusesAreClosed: the statuses storage writes on its own
// (running, interrupted) are rows of the closed run-status table.
func TestStorageStatusesAreClosed(t *testing.T) {
	for _, st := range []string{storage.StatusRunning, storage.StatusInterrupted} {
		if _, ok := rules.LookupStatus(rules.RunStatuses, st); !ok {
			t.Errorf("status %q is not in rules.RunStatuses", st)
		}
	}
}

// TestHeldWindowSurvivesRestart: a "for" window open at a restart resumes
// with its original deadline (the door is still open), so the alert is
// neither lost nor restarted from zero.
func TestHeldWindowSurvivesRestart(t *testing.T) {
	h := newHouse(t, Config{Approval: noApproval})
	cmds := h.watch("pilothouse/notify/phone")
	h.deploy(`{"name":"door-left-open","triggers":[{"id":"open","state":"front_door.contact","to":false,"for":"1500ms"}],
	 "steps":[{"id":"tell","call":"notify.phone","args":{"message":"The front door is open"}}]}`)
	opened := time.Now()
	if err := h.sim.Trigger(context.Background(), "front_door", map[string]any{"contact": false}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(h.t, 5*time.Second, "the persisted window", func() bool {
		p, err := h.store.ListPending(context.Background(), "door-left-open")
		return err == nil && len(p) == 1
	})
	h.stop()
	// The server is down for a while (a deadline, not a synchronisation).
	testutil.Eventually(h.t, 5*time.Second, "1.2 s of downtime", func() bool { return time.Since(opened) >= 1200*time.Millisecond })
	h.start()
	testutil.Eventually(h.t, 5*time.Second, "the alert after the restart", func() bool { return cmds.count() > 0 })
	// Resumed: ~1.5 s after the door opened. Restarted from zero it would
	// be ≥ 2.7 s.
	if since := time.Since(opened); since < 1400*time.Millisecond || since > 2200*time.Millisecond {
		t.Fatalf("alert after %v: the window should end ~1.5 s after the door opened", since)
	}
	testutil.Eventually(h.t, 5*time.Second, "the window row to go", func() bool {
		p, _ := h.store.ListPending(context.Background(), "door-left-open")
		return len(p) == 0
	})
}

// TestModes: overlapping firings follow the rule's mode, as Home Assistant
// users know them.
func TestModes(t *testing.T) {
	cases := []struct {
		mode, press string
		want        map[string]int // statuses of the two firings
	}{
		{"single", "on", map[string]int{rules.StatusSuccess: 1, rules.StatusSkipped: 1}},
		{"restart", "off", map[string]int{rules.StatusSuccess: 1, rules.StatusCancelled: 1}},
		{"queued", "brightness_up", map[string]int{rules.StatusSuccess: 2}},
		{"parallel", "brightness_down", map[string]int{rules.StatusSuccess: 2}},
	}
	h := newHouse(t, Config{})
	for _, tc := range cases {
		t.Run(tc.mode, func(t *testing.T) {
			name := "mode-" + tc.mode
			h.deploy(`{"name":"` + name + `","mode":"` + tc.mode + `","triggers":[{"id":"press","event":"bedroom_remote.action","value":"` + tc.press + `"}],
			 "steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}},{"id":"hold","delay":"400ms"},{"id":"off","call":"porch_light.set","args":{"state":"OFF"}}]}`)
			for i := 0; i < 2; i++ {
				if err := h.sim.Press(context.Background(), tc.press); err != nil {
					t.Fatal(err)
				}
				testutil.Eventually(h.t, 15*time.Second, "the press to reach the rule", func() bool { return len(h.firings(name)) > i })
			}
			testutil.Eventually(h.t, 15*time.Second, "both firings to finish as "+fmt.Sprint(tc.want), func() bool {
				got := map[string]int{}
				for _, r := range h.firings(name) {
					got[r.Status]++
				}
				for st, n := range tc.want {
					if got[st] != n {
						return false
					}
				}
				return len(h.firings(name)) == 2
			})
		})
	}
}

// TestCommandsRefusedWhileDisconnected: with the broker down, a firing's
// command is refused at once and the run records not_connected (never a
// silent drop).
func TestCommandsRefusedWhileDisconnected(t *testing.T) {
	h := newHouse(t, Config{})
	if err := h.broker.Close(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(h.t, 5*time.Second, "the disconnect", func() bool { return !h.client.Connected() })
	h.deploy(`{"name":"every-second","triggers":[{"id":"tick","cron":"* * * * * *"}],
	 "steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}}]}`)
	testutil.Eventually(h.t, 5*time.Second, "a refused firing", func() bool {
		for _, r := range h.firings("every-second") {
			if r.Status == rules.StatusNotConnected && !r.OK {
				return true
			}
		}
		return false
	})
	run := h.firings("every-second")[0]
	tr, err := h.eng.Trace(context.Background(), TraceRequest{RunID: run.ID})
	if err != nil {
		t.Fatal(err)
	}
	last := tr.Trace.Steps[len(tr.Trace.Steps)-1]
	if last.ID != "on" || last.Outcome.Status != rules.StepNotConnected || !strings.Contains(last.Outcome.Error, "not connected") {
		t.Fatalf("the call step: %+v", last)
	}
}

// TestNarrowDeployerCannotReplaceHiddenRule: a deployer whose scope hides
// the owner's lock rule cannot overwrite it by deploying the same name; a
// rule it can see, it may replace.
func TestNarrowDeployerCannotReplaceHiddenRule(t *testing.T) {
	owner := &Principal{Name: "owner", TokenHash: HashToken("o"), Deploy: true, Approval: &noApproval}
	kid := &Principal{Name: "kid", TokenHash: HashToken("k"), Deploy: true, Scope: Scope{DenyTypes: []string{"lock", "cover"}, DenyDevices: []string{"notify"}}}
	h := newHouse(t, Config{Principals: []*Principal{owner, kid}})
	octx := WithPrincipal(context.Background(), owner)
	kctx := WithPrincipal(context.Background(), kid)
	lockRule := `{"name":"night-lock","triggers":[{"id":"t","cron":"0 0 23 * * *"}],"steps":[{"id":"s","call":"front_lock.set","args":{"state":"LOCK"}}]}`
	if r, err := h.eng.Execute(octx, ExecuteRequest{Program: json.RawMessage(lockRule)}); err != nil || !r.Outcome.OK {
		t.Fatalf("owner deploy: %+v %v", r, err)
	}
	harmless := `{"name":"night-lock","triggers":[{"id":"t","cron":"0 0 23 * * *"}],"steps":[{"id":"s","call":"porch_light.set","args":{"state":"OFF"}}]}`
	r, err := h.eng.Execute(kctx, ExecuteRequest{Program: json.RawMessage(harmless)})
	if err != nil || r.Outcome.OK || r.Outcome.Status != rules.StatusDenied {
		t.Fatalf("kid replaced the hidden lock rule: %+v %v", r.Outcome, err)
	}
	ri, err := h.eng.GetRule(octx, "night-lock", 0)
	if err != nil || !strings.Contains(string(ri.Program), "front_lock.set") {
		t.Fatalf("the owner's rule changed: %s %v", ri.Program, err)
	}
	// A rule the kid can see (its own) it may replace.
	own := strings.ReplaceAll(harmless, "night-lock", "kid-porch")
	for i := 0; i < 2; i++ {
		if r, err := h.eng.Execute(kctx, ExecuteRequest{Program: json.RawMessage(own)}); err != nil || !r.Outcome.OK {
			t.Fatalf("kid deploy %d of its own rule: %+v %v", i+1, r.Outcome, err)
		}
	}
}

// TestGatedDeployerCannotSwitchOffAnotherRiskyRule: a deployer whose
// policy sends risky plans to a person (an assistant) may not disable,
// enable or remove a risky rule another principal installed (the owner's
// approved night lock): it could disarm what a person approved. Its own
// rules and harmless ones of others stay its to manage.
func TestGatedDeployerCannotSwitchOffAnotherRiskyRule(t *testing.T) {
	owner := &Principal{Name: "owner", TokenHash: HashToken("o"), Deploy: true, Approval: &noApproval}
	bot := &Principal{Name: "assistant", TokenHash: HashToken("a"), Deploy: true, Approval: &ApprovalPolicy{}}
	h := newHouse(t, Config{Principals: []*Principal{owner, bot}})
	octx := WithPrincipal(context.Background(), owner)
	actx := WithPrincipal(context.Background(), bot)
	for _, prog := range []string{
		`{"name":"night-lock","triggers":[{"id":"t","cron":"0 0 23 * * *"}],"steps":[{"id":"s","call":"front_lock.set","args":{"state":"LOCK"}}]}`,
		`{"name":"porch-off","triggers":[{"id":"t","cron":"0 0 23 * * *"}],"steps":[{"id":"s","call":"porch_light.set","args":{"state":"OFF"}}]}`,
	} {
		if r, err := h.eng.Execute(octx, ExecuteRequest{Program: json.RawMessage(prog)}); err != nil || !r.Outcome.OK {
			t.Fatalf("owner deploy: %+v %v", r, err)
		}
	}
	var re *pilotage.RequestError
	if _, err := h.eng.SetRuleEnabled(actx, "night-lock", false); !errors.As(err, &re) || !strings.Contains(re.Message, "destructive: front_lock.set") {
		t.Fatalf("the assistant disabled the owner's lock rule: %v", err)
	}
	if _, err := h.eng.RemoveRule(actx, "night-lock"); !errors.As(err, &re) {
		t.Fatalf("the assistant removed the owner's lock rule: %v", err)
	}
	// Replacing it with a harmless body under its name would disarm it as
	// surely: that waits for a person's approval, naming the rule it replaces.
	harmless := `{"name":"night-lock","triggers":[{"id":"t","cron":"0 0 23 * * *"}],"steps":[{"id":"s","call":"porch_light.set","args":{"state":"OFF"}}]}`
	r, err := h.eng.Execute(actx, ExecuteRequest{Program: json.RawMessage(harmless), Input: json.RawMessage(`{"install":{"replace":true}}`)})
	if err != nil || r.Outcome.Status != rules.StatusApprovalPending || r.Approval == nil || !strings.Contains(strings.Join(r.Approval.Reasons, ";"), "replaces owner's rule") {
		t.Fatalf("the assistant's harmless replacement of the lock rule: %+v %+v %v", r.Outcome, r.Approval, err)
	}
	h.eng.Flush()
	if run, err := h.store.GetRun(context.Background(), r.RunID); err != nil || run.Rule != "night-lock" {
		t.Fatalf("the pending deploy's run names rule %q, want night-lock (%v)", run.Rule, err)
	}
	if ri, err := h.eng.GetRule(octx, "night-lock", 0); err != nil || ri.Status != "enabled" || !strings.Contains(string(ri.Program), "front_lock.set") {
		t.Fatalf("the owner's lock rule: %+v %s %v", ri.Status, ri.Program, err)
	}
	if _, err := h.eng.SetRuleEnabled(actx, "porch-off", false); err != nil {
		t.Fatalf("the assistant may switch a harmless rule: %v", err)
	}
	if _, err := h.eng.SetRuleEnabled(octx, "night-lock", false); err != nil {
		t.Fatalf("the owner may switch its lock rule: %v", err)
	}
}
