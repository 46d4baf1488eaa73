package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// adminAndViewer is twoPrincipals with the owner an administrator (as a
// config file makes it) and the guest a viewer (no deploy).
func adminAndViewer(cfg *Config) {
	twoPrincipals(cfg)
	cfg.Principals[0].Admin = true
}

// bigAnswer is a test run whose answer is about 2.6 MB of JSON.
const bigAnswer = `{"name":"big","triggers":[{"id":"t","state":"hall_motion.occupancy"}],
	"steps":[{"id":"r","repeat":{"count":12},"do":[{"id":"s","set":{"v":"{{ repeat('x', 200000) }}"}}]}]}`

// TestUnreadAnswersAreBounded: execute answers a client never reads are
// charged against limits.max_served_run_bytes until written, a viewer's
// within the guests' half: a viewer's second and third unread test-run
// answers find no room and are refused (counted on /healthz), while the
// owner's large test run is still answered; the room comes back when
// the readers go (round 20: 180 unread 4 MB answers took RSS from 36 MB
// to 2.37 GB, none of it counted).
func TestUnreadAnswersAreBounded(t *testing.T) {
	cfg := testConfig(t)
	adminAndViewer(cfg)
	a := startTestApp(t, cfg)
	owner := mcpClientWith(t, a.URL()+"/mcp", "owner-token", nil)
	testutil.Eventually(t, 10*time.Second, "the demo catalog", func() bool {
		got, isErr := call(t, owner, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": "hall_motion.occupancy"})
		return !isErr && got["entry"] != nil
	})
	args := fmt.Sprintf(`{"language":"automation/1","test_run":true,"store":false,"program":%s}`, bigAnswer)
	stall := func() net.Conn {
		return stalledCall(t, a.ln.Addr().String(), "", "guest-token", "pilotage_execute", args)
	}
	first := stall()
	testutil.Eventually(t, 10*time.Second, "the unread answer charged", func() bool {
		return servedHealth(t, a.URL()).InFlightBytes > 0
	})
	held := []net.Conn{first, stall(), stall()}
	testutil.Eventually(t, 15*time.Second, "the answers beyond the guests' half refused", func() bool {
		return servedHealth(t, a.URL()).Refused >= 2
	})
	if h := servedHealth(t, a.URL()); h.InFlightBytes > int64(cfg.Limits.MaxServedRunBytes/2) {
		t.Errorf("a viewer's unread answers hold %d bytes, more than the guests' half of %d", h.InFlightBytes, cfg.Limits.MaxServedRunBytes)
	}
	var prog map[string]any
	_ = json.Unmarshal([]byte(bigAnswer), &prog)
	out, isErr := call(t, owner, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog, "test_run": true, "store": false})
	if oc, _ := out["outcome"].(map[string]any); isErr || oc["ok"] != true {
		t.Errorf("the owner's test run while a viewer holds unread answers: %.300v", out)
	}
	for _, c := range held {
		c.Close()
	}
	testutil.Eventually(t, 15*time.Second, "the answers' room given back", func() bool {
		return servedHealth(t, a.URL()).InFlightBytes == 0
	})
}

// TestOwnerReadsPastAGuestsSlowReader: while a guest's slow reader holds
// the guests' half of limits.max_served_run_bytes, the owner's reads of
// its own run costing more than the other half (2.6 MB stored, 16 times
// that to serve) are served over MCP and on the web run page (round 20:
// refused after 2 s, 503 on the web, for as long as the reader held on).
func TestOwnerReadsPastAGuestsSlowReader(t *testing.T) {
	cfg := testConfig(t)
	adminAndViewer(cfg)
	a := startTestApp(t, cfg)
	owner := mcpClientWith(t, a.URL()+"/mcp", "owner-token", nil)
	guest := mcpClientWith(t, a.URL()+"/mcp", "guest-token", nil)
	testutil.Eventually(t, 10*time.Second, "the demo catalog", func() bool {
		got, isErr := call(t, guest, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": "hall_motion.occupancy"})
		return !isErr && got["entry"] != nil
	})
	var prog map[string]any
	_ = json.Unmarshal([]byte(bigAnswer), &prog)
	stored := func(c *client.Client) string {
		out, _ := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog, "test_run": true, "trace_level": "none"})
		id, _ := out["run_id"].(string)
		if id == "" {
			t.Fatalf("a stored test run: %.300v", out)
		}
		return id
	}
	guestRun, ownerRun := stored(guest), stored(owner)
	stalledTrace(t, a.ln.Addr().String(), "", guestRun)
	testutil.Eventually(t, 10*time.Second, "the guest's slow read holding the guests' half", func() bool {
		return servedHealth(t, a.URL()).InFlightBytes >= int64(cfg.Limits.MaxServedRunBytes/2)
	})
	if got, isErr := call(t, owner, "pilotage_trace", map[string]any{"run_id": ownerRun}); isErr {
		t.Errorf("the owner's trace read while a guest holds its half: %.300v", got)
	}
	cookie := strings.TrimSuffix(strings.TrimPrefix(webSession(t, a.URL(), "owner-token"), "Cookie: "), "\r\n")
	req, _ := http.NewRequest(http.MethodGet, a.URL()+"/runs/"+ownerRun+"/json", nil)
	req.Header.Set("Cookie", cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the owner's web run JSON while a guest holds its half: %d", resp.StatusCode)
	}
	if h := servedHealth(t, a.URL()); h.Refused != 0 {
		t.Errorf("/healthz served_runs.refused = %d, want 0", h.Refused)
	}
}
