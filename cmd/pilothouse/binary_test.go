package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// TestStdioServesMCP launches "pilothouse stdio" the way a desktop assistant
// does and speaks MCP to it over stdin/stdout with mcp-go's stdio client.
func TestStdioServesMCP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	c, err := client.NewStdioMCPClient(bin, nil, "stdio", "--broker-listen", "127.0.0.1:0", "--data", t.TempDir(), "--demo-pace", "1h", "--log-level", "warn")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "stdio-test", Version: "1"}
	req.Params.ProtocolVersion = "2025-11-25"
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize over stdio: %v", err)
	}
	var man map[string]any
	testutil.Eventually(t, 10*time.Second, "the catalog over stdio", func() bool {
		cr := mcp.CallToolRequest{}
		cr.Params.Name = "pilotage_lookup"
		cr.Params.Arguments = map[string]any{"language": "automation/1", "verb": "get", "id": "hall_light.set"}
		res, err := c.CallTool(ctx, cr)
		if err != nil {
			t.Fatal(err)
		}
		return !res.IsError
	})
	cr := mcp.CallToolRequest{}
	cr.Params.Name = "pilotage_discover"
	res, err := c.CallTool(ctx, cr)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(b, &man)
	if man["pilotage"] != "1.1" {
		t.Fatalf("manifest over stdio: %s", b)
	}
}

// TestSimAgainstAnyBroker runs "pilothouse sim --broker" against a broker it
// did not start and sees the Zigbee2MQTT bridge appear.
func TestSimAgainstAnyBroker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	b, err := mqtt.StartBroker("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cmd := exec.Command(bin, "sim", "--broker", b.URL(), "--log-level", "warn")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }()
	sub, err := mqtt.Dial(context.Background(), mqtt.Options{Broker: b.URL(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var mu sync.Mutex
	var devices []map[string]any
	if err := sub.Subscribe("zigbee2mqtt/bridge/devices", 1, func(m mqtt.Message) {
		mu.Lock()
		defer mu.Unlock()
		_ = json.Unmarshal(m.Payload, &devices)
	}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, "bridge/devices from the simulator", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(devices) >= 10
	})
}
