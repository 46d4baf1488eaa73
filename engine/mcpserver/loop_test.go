package mcpserver_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// TestRuleThatFiresItselfIsStopped: a rule toggling the plug whose state
// triggers it (the attacker judge's 253,690 commands in 9.5 s) is
// disabled after a bounded number of commands, stays disabled, and says
// so (log, logbook, /healthz's runs.loops_stopped). A rule a sensor fires
// many times in a row, commanding another device, is not touched.
func TestRuleThatFiresItselfIsStopped(t *testing.T) {
	h := testhouse.RunHouse(t, testhouse.Options{})
	ctx := context.Background()
	var sets atomic.Int64
	if err := h.Conn.Subscribe("zigbee2mqtt/living_plug/set", 0, func(mqtt.Message) { sets.Add(1) }); err != nil {
		t.Fatal(err)
	}
	c := h.InProcess()
	deployed(t, c, `{"name":"plug-loop","triggers":[{"id":"t","state":"living_plug.state"}],
	  "steps":[{"id":"flip","call":"living_plug.set","args":{"state":"TOGGLE"}}]}`)
	deployed(t, c, `{"name":"motion-light","mode":"queued","triggers":[{"id":"m","state":"hall_motion.occupancy"}],
	  "steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)

	for i := range 30 { // a sensor busy on its own: not a loop
		if err := h.Sim.Trigger(ctx, "hall_motion", map[string]any{"occupancy": i%2 == 0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Conn.Publish(ctx, "zigbee2mqtt/living_plug/set", []byte(`{"state":"TOGGLE"}`), 0, false); err != nil {
		t.Fatal(err)
	}
	status := func(name string) string {
		ri, err := h.Engine.GetRule(ctx, name, 0)
		if err != nil {
			t.Fatal(err)
		}
		return ri.Status
	}
	testutil.Eventually(t, 15*time.Second, "the looping rule disabled", func() bool { return status("plug-loop") == "disabled" })
	// Stable: no command after the rule is off.
	var n int64
	testutil.Eventually(t, 15*time.Second, "the commands to stop", func() bool {
		before := sets.Load()
		time.Sleep(300 * time.Millisecond) // a window to see none arrive, not a sync
		n = sets.Load()
		return n == before
	})
	if n > 60 {
		t.Errorf("%d commands to the plug before the rule stopped, want about 20", n)
	}
	if got := status("motion-light"); got != "enabled" {
		t.Errorf("motion-light: %s, want enabled", got)
	}
	if got := h.Engine.RunStats().LoopsStopped; got != 1 {
		t.Errorf("loops_stopped %d, want 1", got)
	}
	h.Engine.FlushLogbook()
	page, err := h.Engine.Logbook(ctx, engine.LogQuery{Rule: "plug-loop"})
	if err != nil {
		t.Fatal(err)
	}
	said := false
	for _, en := range page.Entries {
		said = said || strings.Contains(en.Text, "rule plug-loop disabled") && strings.Contains(en.Text, "20th time in a row because of a rule's command")
	}
	if !said {
		t.Errorf("no logbook line says why: %+v", page.Entries)
	}
	if on, err := h.Store.GetRule(ctx, "plug-loop"); err != nil || on.Enabled {
		t.Errorf("stored rule: enabled %v (%v), want disabled across a restart", on.Enabled, err)
	}

	// A helper toggled on its own state, queued: the same guard.
	if out, isErr := callTool(t, c, "pilothouse_helpers", map[string]any{"verb": "create", "helper": map[string]any{"id": "ping", "kind": "flag"}}); isErr {
		t.Fatalf("create ping: %v", out)
	}
	deployed(t, c, `{"name":"ping-loop","mode":"queued","triggers":[{"id":"t","state":"ping.state"}],
	  "steps":[{"id":"flip","call":"ping.toggle"}]}`)
	if err := h.Devices.Call(ctx, "ping.toggle", nil); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, "the helper loop disabled", func() bool { return status("ping-loop") == "disabled" })
	if got := h.Engine.RunStats().LoopsStopped; got != 2 {
		t.Errorf("loops_stopped %d, want 2", got)
	}

	// Two rules feeding each other: the porch light toggles the plug, the
	// plug the porch light. One of them is stopped.
	deployed(t, c, `{"name":"plug-to-porch","triggers":[{"id":"t","state":"living_plug.state"}],
	  "steps":[{"id":"flip","call":"porch_light.set","args":{"state":"TOGGLE"}}]}`)
	deployed(t, c, `{"name":"porch-to-plug","triggers":[{"id":"t","state":"porch_light.state"}],
	  "steps":[{"id":"flip","call":"living_plug.set","args":{"state":"TOGGLE"}}]}`)
	sets.Store(0)
	if err := h.Conn.Publish(ctx, "zigbee2mqtt/living_plug/set", []byte(`{"state":"TOGGLE"}`), 0, false); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, "one rule of the pair disabled", func() bool {
		return status("plug-to-porch") == "disabled" || status("porch-to-plug") == "disabled"
	})
	testutil.Eventually(t, 15*time.Second, "the pair's commands to stop", func() bool {
		before := sets.Load()
		time.Sleep(300 * time.Millisecond) // a window to see none arrive, not a sync
		n = sets.Load()
		return n == before
	})
	if n > 40 {
		t.Errorf("%d commands to the plug from the pair, want about 10", n)
	}

	// Another device's entity on the plug's state topic (a Home Assistant
	// sensor mirroring it), triggering a rule that toggles the plug: the
	// command's topic ties them.
	cfg := `{"name":"Plug mirror","state_topic":"zigbee2mqtt/living_plug","value_template":"{{ value_json.state }}","unique_id":"plugmirror"}`
	if err := h.Conn.Publish(ctx, "homeassistant/sensor/plugmirror/config", []byte(cfg), 1, true); err != nil {
		t.Fatal(err)
	}
	var mirror string
	testutil.Eventually(t, 10*time.Second, "the mirror sensor in the catalog", func() bool {
		for _, en := range h.Devices.Snapshot().Entries() {
			if strings.HasPrefix(en.ID, "plug_mirror.") && en.Kind == "state" {
				mirror = en.ID
			}
		}
		return mirror != ""
	})
	deployed(t, c, `{"name":"mirror-loop","mode":"queued","triggers":[{"id":"t","state":"`+mirror+`"}],
	  "steps":[{"id":"flip","call":"living_plug.set","args":{"state":"TOGGLE"}}]}`)
	if err := h.Conn.Publish(ctx, "zigbee2mqtt/living_plug/set", []byte(`{"state":"TOGGLE"}`), 0, false); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, "the mirror loop disabled", func() bool { return status("mirror-loop") == "disabled" })
}
