package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestServedRunsAreBounded: the bytes of stored runs being served at once
// are bounded (limits.max_served_run_bytes), counted until the response is
// written: while a client that does not read holds a 4 MB run's trace,
// another read of it waits, then is refused with resource_exhausted
// (counted on /healthz), and is served once the first is gone.
func TestServedRunsAreBounded(t *testing.T) {
	cfg := testConfig(t)
	twoPrincipals(cfg)
	cfg.Limits.MaxServedRunBytes = cfg.Limits.MaxRunBytes + cfg.Limits.MaxRunBytes/2 // one large run at a time
	a := startTestApp(t, cfg)
	guest := mcpClientWith(t, a.URL()+"/mcp", "guest-token", nil)
	runID := bigGuestRun(t, guest)
	trace := func() (map[string]any, bool) {
		return call(t, guest, "pilotage_trace", map[string]any{"run_id": runID})
	}
	if got, isErr := trace(); isErr {
		t.Fatalf("trace alone: %v", got)
	} else if b, _ := json.Marshal(got); len(b) < 3<<20 {
		t.Fatalf("the run's trace is %d bytes, want a large one", len(b))
	}

	// A client asks for the trace and does not read the answer.
	sid := guest.GetTransport().(*transport.StreamableHTTP).GetSessionId()
	stalled := stalledTrace(t, a.ln.Addr().String(), sid, runID)
	testutil.Eventually(t, 10*time.Second, "the stalled read holding its run", func() bool {
		return servedHealth(t, a.URL()).InFlightBytes > 0
	})
	got, isErr := trace()
	if re, _ := got["error"].(map[string]any); !isErr || re["kind"] != "resource_exhausted" || !strings.Contains(fmt.Sprint(re["message"]), "max_served_run_bytes") {
		t.Errorf("a second read while the first is being sent: %.300v, want resource_exhausted naming limits.max_served_run_bytes", got)
	}
	if h := servedHealth(t, a.URL()); h.Refused != 1 {
		t.Errorf("/healthz served_runs.refused = %d, want 1", h.Refused)
	}
	stalled.Close()
	testutil.Eventually(t, 10*time.Second, "the run's room given back", func() bool {
		return servedHealth(t, a.URL()).InFlightBytes == 0
	})
	if got, isErr := trace(); isErr {
		t.Errorf("trace after the stalled client left: %.300v", got)
	}
}

// bigGuestRun stores a test run of about 6 MB as the guest (the
// attacker's large stored run) and returns its id.
func bigGuestRun(t *testing.T, guest *client.Client) string {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, "the demo catalog", func() bool {
		got, isErr := call(t, guest, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": "hall_motion.occupancy"})
		return !isErr && got["entry"] != nil
	})
	var prog map[string]any
	_ = json.Unmarshal([]byte(`{"name":"big","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[
		{"id":"r","repeat":{"count":30},"do":[{"id":"s","set":{"v":"{{ repeat('x', 200000) }}"}}]}]}`), &prog)
	out, _ := call(t, guest, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog, "test_run": true})
	runID, _ := out["run_id"].(string)
	if runID == "" {
		t.Fatalf("no stored run: %v", out)
	}
	return runID
}

type servedRuns struct {
	InFlightBytes int64 `json:"in_flight_bytes"`
	Refused       int   `json:"refused"`
}

func servedHealth(t *testing.T, base string) servedRuns {
	t.Helper()
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		ServedRuns servedRuns `json:"served_runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h.ServedRuns
}

// stalledTrace sends a pilotage_trace call on session sid over a socket
// with a tiny receive buffer, and never reads the answer.
func stalledTrace(t *testing.T, addr, sid, runID string) net.Conn {
	t.Helper()
	return stalledCall(t, addr, sid, "guest-token", "pilotage_trace", fmt.Sprintf(`{"run_id":%q}`, runID))
}

// stalledCall sends a call of tool with args (JSON) as token's principal
// on session sid ("" = stateless) over a socket with a tiny receive
// buffer, and never reads the answer.
func stalledCall(t *testing.T, addr, sid, token, tool, args string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	c, err := d.DialContext(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	session, version := "", mcp.LATEST_PROTOCOL_VERSION // stateless
	if sid != "" {
		session, version = "Mcp-Session-Id: "+sid+"\r\n", mcp.LATEST_LEGACY_PROTOCOL_VERSION
	}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{%q:%q,%q:{"name":"stall","version":"1"},%q:{}}}}`,
		tool, args, mcp.MetaKeyProtocolVersion, version, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities)
	req := "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token + "\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nMcp-Method: tools/call\r\nMcp-Name: " + tool + "\r\n" + session + "Mcp-Protocol-Version: " + version +
		fmt.Sprintf("\r\nContent-Length: %d\r\n\r\n", len(body)) + body
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	return c
}
