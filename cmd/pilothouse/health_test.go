package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/helpers"
	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotage"
)

// getHealth fetches base's /healthz, decoded as the server's own document.
func getHealth(t *testing.T, base string) (int, health) {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatalf("healthz body: %v", err)
	}
	return resp.StatusCode, h
}

// TestHealthzReportsStorageThatCannotWrite: with the database locked by
// another process, a stored test run is a request error (not JSON-RPC
// -32603) and /healthz answers 503 with the storage error; once the lock
// goes, /healthz recovers by itself.
func TestHealthzReportsStorageThatCannotWrite(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	c := mcpClient(t, a.URL()+"/mcp", nil, "")
	if code, h := getHealth(t, a.URL()); code != http.StatusOK || !h.Storage.OK || len(h.Load.Warnings) != 0 {
		t.Fatalf("healthz before: %d %+v", code, h)
	}

	release := testhouse.LockDatabase(t, a.cfg.DataDir)
	var prog map[string]any
	_ = json.Unmarshal([]byte(motionLight), &prog)
	out, isErr := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog, "test_run": true})
	if e, _ := out["error"].(map[string]any); !isErr || e["kind"] != "resource_exhausted" {
		t.Fatalf("stored test run with the database locked: %v", out)
	}
	code, h := getHealth(t, a.URL())
	if code != http.StatusServiceUnavailable || h.Status != "storage cannot write" || h.Storage.OK || !strings.Contains(h.Storage.Error, "locked") || h.Storage.Failures == 0 {
		t.Fatalf("healthz with the database locked: %d %+v", code, h)
	}

	release()
	testutil.Eventually(t, 20*time.Second, "/healthz to recover", func() bool {
		code, h := getHealth(t, a.URL())
		return code == http.StatusOK && h.Storage.OK && h.Status == "ok"
	})
}

// TestLossesAreSaidOnHealthzAndEveryPage: a rule the loop guard disabled
// is counted on /healthz (runs.loops_stopped) and said, with the other
// losses since the start, in load.warnings, which every web page shows.
func TestLossesAreSaidOnHealthzAndEveryPage(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	c := mcpClient(t, a.URL()+"/mcp", nil, "")
	var prog map[string]any
	_ = json.Unmarshal([]byte(`{"name":"loop","triggers":[{"id":"t","state":"living_plug.state"}],
		"steps":[{"id":"flip","call":"living_plug.set","args":{"state":"TOGGLE"}}]}`), &prog)
	if out, isErr := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog}); isErr {
		t.Fatalf("deploy: %v", out)
	}
	next := "ON"
	if a.sim.State("living_plug")["state"] == "ON" {
		next = "OFF"
	}
	if err := a.sim.Trigger(context.Background(), "living_plug", map[string]any{"state": next}); err != nil {
		t.Fatal(err)
	}
	const said = "1 rules disabled because they kept firing themselves or each other"
	testutil.Eventually(t, 15*time.Second, "the loop stopped and counted", func() bool {
		_, h := getHealth(t, a.URL())
		return h.Runs.LoopsStopped == 1 && len(h.Load.Warnings) == 1 && strings.HasPrefix(h.Load.Warnings[0], said)
	})
	resp, err := http.Get(a.URL() + "/devices")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(body), said) {
		t.Errorf("/devices does not say the loop stopped:\n%.2000s", body)
	}
}

// TestUnservedHelperIsSaidOnHealthz: a configured helper whose id a
// device holds (the demo plug's, stored by the start before) is not
// served, and /healthz says so (it was a log line); the plug keeps its id.
func TestUnservedHelperIsSaidOnHealthz(t *testing.T) {
	cfg := testConfig(t)
	startTestApp(t, cfg).stop()
	cfg.Helpers = []helpers.Def{{ID: "living_plug", Kind: helpers.Flag}}
	a := startTestApp(t, cfg)
	_, h := getHealth(t, a.URL())
	if len(h.Load.Warnings) != 1 || !strings.HasPrefix(h.Load.Warnings[0], `helper living_plug is not served: `) {
		t.Fatalf("warnings %q", h.Load.Warnings)
	}
	if e, ok := a.devs.Snapshot().Get("living_plug.set"); !ok || e.Kind != pilotage.KindAction {
		t.Fatalf("the demo plug lost its action: %+v", e)
	}
}
