package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// testConfig is a zero-setup configuration on free ports in a temp folder.
func testConfig(t *testing.T) *Config {
	t.Helper()
	c := defaultConfig()
	c.Addr = "127.0.0.1:0"
	c.BrokerListen = "127.0.0.1:0"
	c.DataDir = t.TempDir()
	c.DemoPace = time.Hour // no spontaneous changes during a test
	c.Notify = nil
	return c
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func startTestApp(t *testing.T, cfg *Config) *app {
	t.Helper()
	a, err := startApp(context.Background(), cfg, quietLogger(), true)
	if err != nil {
		t.Fatalf("startApp: %v", err)
	}
	t.Cleanup(a.stop)
	return a
}

// mcpClient connects the real mcp-go client over streamable HTTP.
func mcpClient(t *testing.T, url string, headers map[string]string, version string) *client.Client {
	t.Helper()
	var opts []transport.StreamableHTTPCOption
	if headers != nil {
		opts = append(opts, transport.WithHTTPHeaders(headers))
	}
	return mcpClientOpts(t, url, version, opts...)
}

// mcpClientOpts starts and initializes a streamable HTTP client with opts
// (closed at the end of the test).
func mcpClientOpts(t *testing.T, url, version string, opts ...transport.StreamableHTTPCOption) *client.Client {
	t.Helper()
	return testhouse.Client(t, url, version, opts...)
}

// call invokes a tool and decodes its structured result.
func call(t *testing.T, c *client.Client, name string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	return testhouse.Call(t, c, name, args)
}

const motionLight = `{
  "name": "hall-motion-light",
  "description": "Hall light on when motion is seen",
  "mode": "restart",
  "triggers": [{"id": "motion", "state": "hall_motion.occupancy", "to": true}],
  "steps": [
    {"id": "on", "call": "hall_light.set", "args": {"state": "ON", "brightness": 180}}
  ]
}`

func TestEndToEndHTTP(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	for _, version := range []string{mcp.ProtocolVersion20250618, "2025-11-25", mcp.ProtocolVersion20260728} {
		t.Run(version, func(t *testing.T) {
			c := mcpClient(t, a.URL()+"/mcp", nil, version)
			man, isErr := call(t, c, "pilotage_discover", map[string]any{})
			if isErr || man["pilotage"] != "1.1" {
				t.Fatalf("discover: %v", man)
			}
		})
	}
	c := mcpClient(t, a.URL()+"/mcp", nil, "")

	// Guides.
	idx, _ := call(t, c, "pilotage_learn", map[string]any{"language": "automation/1"})
	if guides, _ := idx["guides"].([]any); len(guides) < 2 {
		t.Fatalf("guide index: %v", idx)
	}
	core, isErr := call(t, c, "pilotage_learn", map[string]any{"language": "automation/1", "id": "core"})
	if isErr || len(core["body"].(string)) > 8192 {
		t.Fatalf("core guide: err=%v size=%d", isErr, len(fmt.Sprint(core["body"])))
	}
	nf, isErr := call(t, c, "pilotage_learn", map[string]any{"language": "automation/1", "id": "nope"})
	if !isErr || nf["error"].(map[string]any)["kind"] != "not_found" {
		t.Fatalf("unknown guide: isErr=%v %v", isErr, nf)
	}

	// The demo devices appear in the catalog.
	testutil.Eventually(t, 10*time.Second, "demo catalog", func() bool {
		got, isErr := call(t, c, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": "hall_light.set"})
		return !isErr && got["entry"] != nil
	})

	// Validate → plan.
	var prog map[string]any
	_ = json.Unmarshal([]byte(motionLight), &prog)
	val, _ := call(t, c, "pilotage_validate", map[string]any{"language": "automation/1", "program": prog})
	if val["valid"] != true {
		t.Fatalf("validate: %v", val)
	}
	cv := val["catalog_version"].(string)

	// Test run: nothing published, a trace comes back.
	tr, _ := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog, "test_run": true})
	if tr["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("test run: %v", tr)
	}

	// Watch commands to the hall light.
	sub, err := mqtt.Dial(context.Background(), mqtt.Options{Broker: a.broker.URL(), ClientID: "e2e-watch", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var mu sync.Mutex
	var commands []string
	if err := sub.Subscribe("zigbee2mqtt/hall_light/set", 1, func(m mqtt.Message) {
		mu.Lock()
		commands = append(commands, string(m.Payload))
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}

	// Deploy.
	dep, _ := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog, "expected_catalog_version": cv, "idempotency_key": "k1"})
	if dep["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("deploy: %v", dep)
	}
	out := dep["output"].(map[string]any)
	if !strings.HasPrefix(out["program_ref"].(string), "automation.hall-motion-light@") {
		t.Fatalf("program_ref: %v", out)
	}
	// Idempotent replay returns the recorded result.
	again, _ := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog, "expected_catalog_version": cv, "idempotency_key": "k1"})
	if again["run_id"] != dep["run_id"] {
		t.Fatalf("replay: got run %v, want %v", again["run_id"], dep["run_id"])
	}
	// Drift.
	drift, _ := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog, "expected_catalog_version": "cv1-stale"})
	if drift["outcome"].(map[string]any)["status"] != "catalog_drift" {
		t.Fatalf("drift: %v", drift)
	}

	// Motion → the rule fires → the command reaches MQTT.
	if err := a.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": true}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the hall light command", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(commands) > 0
	})
	var runID string
	testutil.Eventually(t, 5*time.Second, "the firing in the rule listing", func() bool {
		a.eng.Flush()
		rl, _ := call(t, c, "pilothouse_rules", map[string]any{})
		for _, r := range rl["rules"].([]any) {
			rm := r.(map[string]any)
			if rm["name"] == "hall-motion-light" {
				if f, _ := rm["last_firings"].([]any); len(f) > 0 {
					runID = f[0].(map[string]any)["run_id"].(string)
					return true
				}
			}
		}
		return false
	})
	got, isErr := call(t, c, "pilotage_trace", map[string]any{"run_id": runID})
	if isErr || got["outcome"].(map[string]any)["status"] != "success" {
		t.Fatalf("trace of firing: %v", got)
	}

	// healthz and the web root.
	resp, err := http.Get(a.URL() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", err, resp)
	}
	var health struct {
		Status  string
		Devices struct{ Total, Partial, Unmodelled int }
	}
	if err := json.NewDecoder(resp.Body).Decode(&health); err != nil || health.Status != "ok" || health.Devices.Total == 0 {
		t.Errorf("healthz: %+v %v", health, err)
	}
	resp.Body.Close()
}

// TestCapabilityAdvertisement: initialize advertises Pilotage under both
// experimental (MCP ≤ 2025-11-25) and extensions (2026-07-28), and the
// instructions point at pilotage_discover.
func TestCapabilityAdvertisement(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	req, _ := http.NewRequest("POST", a.URL()+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Result struct {
			Capabilities struct {
				Experimental map[string]map[string]any `json:"experimental"`
				Extensions   map[string]map[string]any `json:"extensions"`
			} `json:"capabilities"`
			Instructions string `json:"instructions"`
		} `json:"result"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"version": "1.1", "manifest": "pilotage://manifest", "discover": "pilotage_discover"}
	for name, got := range map[string]map[string]any{
		"experimental.pilotage":              out.Result.Capabilities.Experimental["pilotage"],
		"extensions.dev.pilothouse/pilotage": out.Result.Capabilities.Extensions["dev.pilothouse/pilotage"],
	} {
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s.%s = %v, want %v", name, k, got[k], v)
			}
		}
	}
	if !strings.Contains(out.Result.Instructions, "pilotage_discover") {
		t.Errorf("instructions: %q", out.Result.Instructions)
	}
}
