package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/helpers"
)

// TestHelpersSurviveARestart: the configuration file's helpers and one
// made over MCP, their values and a running timer's end are there again
// after the server restarts on the same data folder; the logbook keeps
// what changed.
func TestHelpersSurviveARestart(t *testing.T) {
	cfg := testConfig(t)
	cfg.Helpers = []helpers.Def{{ID: "vacation_mode", Kind: helpers.Flag, Area: "hall"}}
	a := startTestApp(t, cfg)
	c := mcpClient(t, a.URL()+"/mcp", nil, "")
	if out, isErr := call(t, c, "pilothouse_helpers", map[string]any{"verb": "create",
		"helper": map[string]any{"id": "bread", "kind": "timer", "duration": "PT2H"}}); isErr {
		t.Fatalf("create bread: %v", out)
	}
	if out, isErr := call(t, c, "pilothouse_helpers", map[string]any{"verb": "delete", "id": "vacation_mode"}); !isErr ||
		!strings.Contains(out["error"].(map[string]any)["message"].(string), "configuration file") {
		t.Errorf("delete of a configured helper: %v", out)
	}
	ctx := context.Background()
	for _, id := range []string{"vacation_mode.turn_on", "bread.start"} {
		if err := a.devs.Call(ctx, id, nil); err != nil {
			t.Fatal(id, err)
		}
	}
	l, _ := a.devs.Live("bread.finishes_at")
	ends := l.Value
	a.stop()

	b := startTestApp(t, cfg)
	c = mcpClient(t, b.URL()+"/mcp", nil, "")
	for id, want := range map[string]any{"vacation_mode.state": true, "bread.state": "active", "bread.finishes_at": ends} {
		got, _ := call(t, c, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": id})
		if live, _ := got["live"].(map[string]any); live == nil || live["value"] != want {
			t.Errorf("%s after the restart: %v, want %v", id, got["live"], want)
		}
	}
	b.eng.FlushLogbook()
	lp, err := b.eng.Logbook(ctx, engine.LogQuery{Kind: "helper", Device: "vacation_mode"})
	if err != nil || len(lp.Entries) == 0 || lp.Entries[0].Text != "vacation_mode: false → true (vacation_mode.turn_on)" || lp.Entries[0].Area != "hall" {
		t.Errorf("the logbook after the restart: %+v %v", lp.Entries, err)
	}
	page, _ := call(t, c, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "list", "tag": "type:helper"})
	// The file's vacation_mode wins over the demo's; the demo adds 3.
	if n := len(page["items"].([]any)); n != 2+3 {
		t.Errorf("type:helper lists %d entries, want the 2 devices and the demo's 3", n)
	}
}

// TestDemoHouseShipsHelpers: a zero-setup start serves the demo house's
// helpers (named for display), a helper of the configuration file keeps
// the case of its name while its id is lowercase, and the demo's helpers
// go once the demo is off.
func TestDemoHouseShipsHelpers(t *testing.T) {
	cfg := testConfig(t)
	if err := parseConfigYAML("pilothouse.yaml", []byte("helpers:\n  - {id: Guest_Mode, kind: flag}\n"), cfg, nil); err != nil {
		t.Fatal(err)
	}
	a := startTestApp(t, cfg)
	c := mcpClient(t, a.URL()+"/mcp", nil, "")
	names := map[string]string{}
	page, _ := call(t, c, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "list", "tag": "type:helper"})
	for _, it := range page["items"].([]any) {
		it := it.(map[string]any)
		names[it["id"].(string)], _ = it["name"].(string)
	}
	want := map[string]string{"guest_mode": "Guest Mode", "vacation_mode": "Vacation mode", "kitchen_timer": "Kitchen timer",
		"night_counter": "Night visits", "wake_up": "Wake-up time"}
	if !maps.Equal(names, want) {
		t.Fatalf("helpers %v, want %v", names, want)
	}
	if got, _ := call(t, c, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": "kitchen_timer.finished"}); got["entry"] == nil {
		t.Errorf("the demo's timer has no finished event: %v", got)
	}
	// The web says where each came from: the demo's are not the file's.
	for path, want := range map[string][]string{
		"/helpers": {`id="helper-kitchen_timer"`, "the demo house", "configuration file"},
		"/devices": {`<span class="badge st-idle">helper</span>`},
	} {
		resp, err := http.Get(a.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, w := range want {
			if !strings.Contains(string(body), w) {
				t.Errorf("%s lacks %q", path, w)
			}
		}
		if path == "/helpers" && strings.Count(string(body), "configuration file") != 1 {
			t.Errorf("/helpers: guest_mode alone is the file's: %d", strings.Count(string(body), "configuration file"))
		}
	}
	// A demo helper is not deleted (it comes back with the demo), and the
	// owner's helper of its id replaces it, as the documentation says.
	if out, isErr := call(t, c, "pilothouse_helpers", map[string]any{"verb": "delete", "id": "kitchen_timer"}); !isErr || !strings.Contains(fmt.Sprint(out), "demo house's helper") {
		t.Errorf("delete a demo helper: %v", out)
	}
	if out, isErr := call(t, c, "pilothouse_helpers", map[string]any{"verb": "update", "helper": map[string]any{"id": "vacation_mode", "kind": "flag", "name": "Away"}}); isErr {
		t.Errorf("the owner's vacation_mode over the demo's: %v", out)
	}
	a.stop()

	cfg.Demo = false
	b := startTestApp(t, cfg)
	c = mcpClient(t, b.URL()+"/mcp", nil, "")
	page, _ = call(t, c, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "list", "tag": "type:helper"})
	// The demo's go; the file's guest_mode and the owner's vacation_mode stay.
	var ids []string
	for _, it := range page["items"].([]any) {
		ids = append(ids, it.(map[string]any)["id"].(string))
	}
	if slices.Sort(ids); !slices.Equal(ids, []string{"guest_mode", "vacation_mode"}) {
		t.Errorf("without the demo: %v", ids)
	}
}
