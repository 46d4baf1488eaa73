package mcpserver_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pilothouse/pilothouse/engine"
)

// TestTraceReadsAreChargedWhatTheyCost: a pilotage_trace read of a large
// stored run is charged against limits.max_served_run_bytes at least what
// serving it allocates (reading, decoding, encoding the MCP answer), so
// the budget bounds memory, not stored bytes (round 18: a 4 MB run's read
// was charged 4 MB and took about 15 times that; 30 readers at once
// peaked at 950 MB under a 64 MiB budget).
func TestTraceReadsAreChargedWhatTheyCost(t *testing.T) {
	s, c := ownerStack(t)
	out, isErr := callTool(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "test_run": true, "program": prog(t, `{"name":"big",
	  "triggers":[{"id":"t","state":"hall_motion.occupancy"}],
	  "steps":[{"id":"r","repeat":{"count":6},"do":[{"id":"s","set":{"v":"{{ repeat('x', 200000) }}"}}]}]}`)})
	id, _ := out["run_id"].(string)
	if isErr || id == "" {
		t.Fatalf("test run: %v", out)
	}
	size, err := s.store.RunSize(context.Background(), id, "")
	if err != nil || size < 1<<20 {
		t.Fatalf("stored run of %d bytes (%v), want a large one", size, err)
	}
	ctx, done := engine.ServingRuns(context.Background())
	if _, err := s.eng.Trace(ctx, engine.TraceRequest{RunID: id}); err != nil {
		t.Fatal(err)
	}
	charged := s.eng.ServedStats().InFlightBytes
	done()
	// The least of three reads: the house's own work adds to any one.
	// Under the race detector sync.Pool keeps nothing, so the encoders
	// allocate their buffers afresh each time: about twice as much.
	cost, reads := uint64(1<<62), 3
	if raceEnabled {
		reads = 1
	}
	for range reads {
		cost = min(cost, traceAllocs(t, s.url, id))
	}
	if raceEnabled {
		cost /= 2
	}
	t.Logf("stored %d bytes, one MCP read allocates %d (%.1fx), charged %d", size, cost, float64(cost)/float64(size), charged)
	if uint64(charged) < cost {
		t.Errorf("a read of a %d-byte run is charged %d bytes but allocates %d", size, charged, cost)
	}
}

// TestAnswersAreChargedWhatTheyCost: a large execute answer (a test run
// of about 1.3 MB) is charged against limits.max_served_run_bytes more
// than serving it allocates beyond the run (the MCP answer's two copies,
// the JSON-RPC message, the encoders' buffer growth), with room for the
// answer itself: without the race detector the run allocated 1.3 MB,
// the whole call over MCP 16 MB, and the answer is charged 28 MB. So the
// budget bounds the memory of answers their clients do not read (round
// 20: 180 unread 4 MB answers took 2.4 GB, none of it charged).
func TestAnswersAreChargedWhatTheyCost(t *testing.T) {
	s, _ := ownerStack(t)
	src := `{"name":"big","triggers":[{"id":"t","state":"hall_motion.occupancy"}],
	  "steps":[{"id":"r","repeat":{"count":6},"do":[{"id":"s","set":{"v":"{{ repeat('x', 200000) }}"}}]}]}`
	req := engine.ExecuteRequest{Program: []byte(src), TestRun: true, Store: new(bool)}
	ctx, done := engine.ServingRuns(context.Background())
	if r, err := s.eng.Execute(ctx, req); err != nil || !r.Outcome.OK {
		t.Fatalf("test run: %+v %v", r, err)
	}
	charged := s.eng.ServedStats().InFlightBytes
	done()
	direct := func() uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, _ = s.eng.Execute(context.Background(), req)
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	args := fmt.Sprintf(`{"language":"automation/1","test_run":true,"store":false,"program":%s}`, src)
	run, call, n := uint64(1<<62), uint64(1<<62), 3
	if raceEnabled {
		n = 1
	}
	for range n {
		run = min(run, direct())
		call = min(call, toolAllocs(t, s.url, "pilotage_execute", args))
	}
	cost := call - min(run, call)
	if raceEnabled {
		cost /= 2 // sync.Pool keeps nothing: the encoders' buffers are allocated afresh
	}
	t.Logf("the run allocates %d, the call over MCP %d: serving costs %d; the answer is charged %d", run, call, cost, charged)
	if uint64(charged) < cost {
		t.Errorf("a 1.3 MB answer is charged %d bytes but serving it allocates %d beyond the run", charged, cost)
	}
}

// traceAllocs is the bytes allocated (server and this client, which
// discards the answer) by one pilotage_trace of run id over HTTP.
func traceAllocs(t *testing.T, url, id string) uint64 {
	t.Helper()
	return toolAllocs(t, url, "pilotage_trace", fmt.Sprintf(`{"run_id":%q}`, id))
}

// toolAllocs is the bytes allocated (server and this client, which
// discards the answer) by one call of tool with args (JSON) over HTTP.
func toolAllocs(t *testing.T, url, tool, args string) uint64 {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":%s,"_meta":{%q:%q,%q:{"name":"cost","version":"1"},%q:{}}}}`,
		tool, args, mcp.MetaKeyProtocolVersion, mcp.LATEST_PROTOCOL_VERSION, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", mcp.LATEST_PROTOCOL_VERSION)
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", tool)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	if resp.StatusCode != http.StatusOK || n < 1<<20 {
		t.Fatalf("%s over HTTP: %d, %d bytes", tool, resp.StatusCode, n)
	}
	return after.TotalAlloc - before.TotalAlloc
}
