package mcpserver_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// oldestInZone is a refusal's "the oldest expires at …" in Asia/Tokyo.
var oldestInZone = regexp.MustCompile(`the oldest expires at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d JST`)

// short is v printed, cut to a few hundred bytes.
func short(v any) string {
	s := fmt.Sprint(v)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// TestStoredTestRunsAreBounded: test runs were never trimmed (only
// firings are): 20 guest test runs with large envelopes grew the data
// folder from 130 MB to 588 MB, kept 30 days. A principal's stored test
// runs are now bounded in count and in bytes (with its idempotency
// records); past a bound a test run that would store is refused before it
// runs, saying which bound and how to test without storing. What is
// stored stays retrievable for the whole retention (spec §6.6 makes that a
// MUST), so the bound refuses new records rather than trimming old ones.
func TestStoredTestRunsAreBounded(t *testing.T) {
	lim := rules.DefaultLimits
	lim.MaxStoredTestRuns = 5
	lim.MaxRunBytes = 512 << 10
	lim.MaxStoredTestBytes = 3 << 19 // 1.5 MiB
	tokyo, zerr := time.LoadLocation("Asia/Tokyo")
	if zerr != nil {
		t.Skip("no zone database:", zerr)
	}
	s := newHTTPStackCfg(t, engine.Config{Limits: lim, Principals: twoPrincipals(), TimeZone: tokyo}, storage.Options{})
	guest, owner := s.client("guest-token"), s.client("owner-token")
	big := `{"name":"big","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"v","set":{"v":"{{ repeat('x', 200000) }}"}}]}`
	small := `{"name":"small","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"v","set":{"v":"x"}}]}`
	exec := func(c *client.Client, src string, extra ...any) (map[string]any, bool) {
		args := map[string]any{"language": "automation/1", "program": prog(t, src), "test_run": true, "trace_level": "none"}
		for i := 0; i+1 < len(extra); i += 2 {
			args[extra[i].(string)] = extra[i+1]
		}
		return callRaw(t, c, "pilotage_execute", args)
	}
	refusedFor := func(out map[string]any, isErr bool, bound string) bool {
		e, _ := out["error"].(map[string]any)
		msg, _ := e["message"].(string)
		return isErr && e["kind"] == "resource_exhausted" && strings.Contains(msg, bound) && strings.Contains(msg, "store: false")
	}

	// Bytes: the guest's large test runs.
	var first string
	stored := 0
	for i := 0; ; i++ {
		out, isErr := exec(guest, big)
		if refusedFor(out, isErr, "limits.max_stored_test_bytes") {
			break
		}
		if isErr || i == 20 {
			t.Fatalf("large test run %d: %s (never refused)", i, short(out))
		}
		if first == "" {
			first, _ = out["run_id"].(string)
		}
		stored++
	}
	u, err := s.store.StoredUsage(context.Background(), "guest")
	t.Logf("guest: %d large test runs stored (%+v) before the byte bound refused one", stored, u)
	if err != nil || u.TestRuns != stored || u.Bytes > int64(lim.MaxStoredTestBytes) || stored < 2 {
		t.Fatalf("guest's stored test runs after %d: %+v %v", stored, u, err)
	}
	// What is stored stays retrievable; an idempotency record needs room
	// too; a test run that stores nothing still runs.
	if out, isErr := callRaw(t, guest, "pilotage_trace", map[string]any{"run_id": first}); isErr {
		t.Errorf("the first stored test run is gone: %v", out)
	}
	if out, isErr := exec(guest, small, "store", false, "idempotency_key", "k1"); !refusedFor(out, isErr, "limits.max_stored_test_bytes") {
		t.Errorf("a test run that stores an idempotency record past the bound: %v", out)
	}
	if out, isErr := exec(guest, big, "store", false); isErr || out["outcome"].(map[string]any)["ok"] != true {
		t.Errorf("an unstored test run past the bound: %s", short(out))
	}

	// Count: the owner's bound is its own.
	for i := range lim.MaxStoredTestRuns {
		if out, isErr := exec(owner, small); isErr {
			t.Fatalf("owner's test run %d: %v", i, out)
		}
	}
	out, isErr := exec(owner, small)
	if !refusedFor(out, isErr, "limits.max_stored_test_runs") {
		t.Fatalf("owner's test run past max_stored_test_runs: %v", out)
	}
	// When room comes back is said in the house's zone (it was UTC).
	if msg := out["error"].(map[string]any)["message"].(string); !oldestInZone.MatchString(msg) {
		t.Errorf("the refusal %q: want when the oldest expires in the house's zone (JST)", msg)
	}
	if u, _ := s.store.StoredUsage(context.Background(), "owner"); u.TestRuns != lim.MaxStoredTestRuns {
		t.Errorf("owner's stored test runs: %+v", u)
	}
}
