package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestHardeningOverMCP drives issue 14's items 1, 5, 10 and 13 through the
// real interface: the mcp-go client over streamable HTTP, as the read-only
// guest where the issue used one (a 214-byte test run took the server
// down) and as the owner for deploys.
func TestHardeningOverMCP(t *testing.T) {
	_, owner, guest := ownerAndGuest(t)
	program := func(s string) map[string]any {
		var p map[string]any
		if err := json.Unmarshal([]byte(s), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	execute := func(who string, src string, test bool) map[string]any {
		c := guest
		if who == "owner" {
			c = owner
		}
		args := map[string]any{"language": "automation/1", "program": program(src)}
		if test {
			args["test_run"] = true
		}
		out, _ := call(t, c, "pilotage_execute", args)
		return out
	}
	outcome := func(out map[string]any) (string, string) {
		o, _ := out["outcome"].(map[string]any)
		s, _ := o["status"].(string)
		e, _ := o["error"].(string)
		return s, e
	}

	t.Run("item 1: the doubling test run ends limit_exceeded", func(t *testing.T) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		out := execute("guest", `{"name":"dbl","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"a","set":{"v":"x"}},{"id":"r","repeat":{"count":40},"do":[{"id":"d","set":{"v":"{{ vars.v + vars.v }}"}}]}]}`, true)
		runtime.ReadMemStats(&after)
		if s, e := outcome(out); s != "limit_exceeded" || !strings.Contains(e, "MaxValueBytes") || !strings.Contains(e, `"d#20"`) {
			t.Fatalf("outcome %s: %s", s, e)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 256<<20 {
			t.Errorf("the server allocated %d MB for it", alloc>>20)
		}
	})
	t.Run("item 13: a delay of 1e300 seconds says what is wrong", func(t *testing.T) {
		out := execute("guest", `{"name":"d","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":[{"id":"d","delay":"{{ 1e300 }}"}]}`, true)
		if s, e := outcome(out); s != "failed" || !strings.Contains(e, "1e+300 seconds") || !strings.Contains(e, "longest duration") {
			t.Fatalf("outcome %s: %s", s, e)
		}
	})
	t.Run("item 5: $env and an alias of state are refused at validate", func(t *testing.T) {
		for _, x := range []string{"$env.state('hall_motion.occupancy')", "let s = state; s('hall_motion.occupancy')"} {
			out, _ := call(t, guest, "pilotage_validate", map[string]any{"language": "automation/1",
				"program": program(`{"name":"v","triggers":[{"id":"t","cron":"@hourly"}],"steps":[{"id":"x","if":"` + x + ` == true","then":[{"id":"y","stop":""}]}]}`)})
			b, _ := json.Marshal(out["diagnostics"])
			if out["valid"] != false || !strings.Contains(string(b), `"non_constant_reference"`) || !strings.Contains(string(b), `"range"`) {
				t.Errorf("%s: valid %v diagnostics %s", x, out["valid"], b)
			}
		}
	})
	t.Run("item 10: a too-deep call chain is refused at deploy", func(t *testing.T) {
		ref := ""
		for i := 0; i <= 4; i++ {
			step := `{"id":"blink","call":"porch_light.set","args":{"state":"TOGGLE"}}`
			if ref != "" {
				step = `{"id":"next","call":"` + ref + `"}`
			}
			out := execute("owner", fmt.Sprintf(`{"name":"chain-%d","triggers":[{"id":"n","at":"03:00"}],"steps":[%s]}`, i, step), false)
			o, _ := out["output"].(map[string]any)
			ref, _ = o["program_ref"].(string)
			if ref == "" {
				t.Fatalf("deploy chain-%d: %v", i, out)
			}
		}
		out := execute("owner", `{"name":"too-deep","triggers":[{"id":"n","at":"03:00"}],"steps":[{"id":"next","call":"`+ref+`"}]}`, false)
		b, _ := json.Marshal(out["diagnostics"])
		if s, _ := outcome(out); s == "success" || !strings.Contains(string(b), `"call_depth"`) || !strings.Contains(string(b), `"/steps/0/call"`) {
			t.Errorf("deploy of a 5-deep chain: %s %s", s, b)
		}
	})
}

// countingTransport counts the bytes of the last response body.
type countingTransport struct{ last atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil {
		c.last.Store(0)
		resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.last}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// cpuTime is the CPU time this process has used.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestHardeningRound2OverMCP drives what the attacker broke after the
// first round of issue 14 through the real interface, as the read-only
// guest: an object template of 1 MB members (5.8 GB), groupBy over a
// million items (220 MB kept, success), strings of control characters
// (a 24 MB envelope, a 52 MB response), an evaluation of 7e14 additions
// that kept a core busy after its client went away, and "@every -1s".
func TestHardeningRound2OverMCP(t *testing.T) {
	cfg := testConfig(t)
	twoPrincipals(cfg)
	// The operation budget is what item 4 checks; on a loaded machine
	// under -race the default wall-time bound could end the run first.
	cfg.Limits.MaxTestRunWall = time.Minute
	a := startTestApp(t, cfg)
	counter := &countingTransport{}
	guest := mcpClientWith(t, a.URL()+"/mcp", "guest-token", &http.Client{Transport: counter})
	testutil.Eventually(t, 10*time.Second, "the demo catalog", func() bool {
		got, isErr := call(t, guest, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": "hall_motion.occupancy"})
		return !isErr && got["entry"] != nil
	})
	program := func(steps string) map[string]any {
		var p map[string]any
		if err := json.Unmarshal([]byte(`{"name":"r2","triggers":[{"id":"t","state":"hall_motion.occupancy"}],"steps":`+steps+`}`), &p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	testRun := func(steps string) (map[string]any, string, string) {
		out, _ := call(t, guest, "pilotage_execute", map[string]any{"language": "automation/1", "program": program(steps), "test_run": true})
		o, _ := out["outcome"].(map[string]any)
		s, _ := o["status"].(string)
		e, _ := o["error"].(string)
		return out, s, e
	}
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}

	t.Run("item 1: an object template is measured as it is built", func(t *testing.T) {
		var b strings.Builder
		for i := range 1500 {
			fmt.Fprintf(&b, `"k%d":"{{ repeat('x', 1000000) }}",`, i)
		}
		steps := `[{"id":"b","set":{"v":{` + strings.TrimSuffix(b.String(), ",") + `}}}]`
		var s, e string
		alloc := allocated(func() { _, s, e = testRun(steps) })
		if s != "limit_exceeded" || !strings.Contains(e, "MaxValueBytes") {
			t.Fatalf("outcome %s: %s", s, e)
		}
		if alloc > 256<<20 {
			t.Errorf("the server allocated %d MB for it", alloc>>20)
		}
	})
	t.Run("item 2: groupBy over a million items is refused", func(t *testing.T) {
		for _, x := range []string{"len(groupBy(1..1000000, #))", "len(groupBy(1..130000, #))"} {
			var s, e string
			alloc := allocated(func() { _, s, e = testRun(`[{"id":"b","set":{"v":"{{ ` + x + ` }}"}}]`) })
			if s != "limit_exceeded" {
				t.Errorf("%s: outcome %s: %s", x, s, e)
			}
			if alloc > 64<<20 {
				t.Errorf("%s: the server allocated %d MB for it", x, alloc>>20)
			}
		}
	})
	t.Run("item 3: the stored run and the response are bounded encoded", func(t *testing.T) {
		out, s, e := testRun(`[{"id":"r","repeat":{"count":10},"do":[{"id":"d","set":{"v":"{{ repeat('\u0001', 150000) }}"}}]}]`)
		resp := counter.last.Load()
		if s != "limit_exceeded" || !strings.Contains(e, "MaxRunBytes") {
			t.Fatalf("outcome %s: %s", s, e)
		}
		runID, _ := out["run_id"].(string)
		a.eng.Flush()
		run, err := a.store.GetRun(context.Background(), runID)
		if err != nil {
			t.Fatal(err)
		}
		maxRun := int64(cfg.Limits.MaxRunBytes)
		if n := int64(len(run.Envelope)); n > maxRun+64<<10 {
			t.Errorf("stored envelope %d bytes, MaxRunBytes %d", n, maxRun)
		}
		if resp > 3*maxRun {
			t.Errorf("execute response %d bytes, want at most 3 x MaxRunBytes", resp)
		}
		tr, isErr := call(t, guest, "pilotage_trace", map[string]any{"run_id": runID})
		if tr["trace"] == nil || isErr {
			t.Fatalf("trace: %v", tr)
		}
		if n := counter.last.Load(); n > 3*maxRun || n < int64(len(run.Envelope)) {
			t.Errorf("trace response %d bytes, want at most 3 x MaxRunBytes", n)
		}
		t.Logf("envelope %d kB, execute response %d kB, trace response %d kB", len(run.Envelope)>>10, resp>>10, counter.last.Load()>>10)
	})
	t.Run("item 4: 7e14 additions end limit_exceeded", func(t *testing.T) {
		start, cpu := time.Now(), cpuTime(t)
		_, s, e := testRun(`[{"id":"a","set":{"l":"{{ 1..90000 }}"}},{"id":"d","set":{"v":"{{ sum(vars.l, sum(vars.l, sum(vars.l, #))) }}"}}]`)
		if s != "limit_exceeded" || !strings.Contains(e, "MaxEvalOps") || !strings.Contains(e, `"d"`) {
			t.Fatalf("outcome %s: %s", s, e)
		}
		// The evaluation takes a fifth of a second of CPU (the rules test
		// holds it to a second); recording the 90,000 numbers and encoding
		// them for the response (client and server) take the rest.
		if used := cpuTime(t) - cpu; used > 2*time.Second*raceSlowdown() {
			t.Errorf("took %v of CPU", used)
		}
		t.Logf("%s in %v (%v of CPU)", e, time.Since(start), cpuTime(t)-cpu)
	})
	t.Run("item 4: an evaluation stops when its client goes away", func(t *testing.T) {
		// Five nested sums over 300 items: 2.4e12 additions.
		// With the operation budget out of the way (a house that raised
		// it), only the request's context can stop it.
		steps := `[{"id":"a","set":{"l":"{{ 1..300 }}"}},{"id":"d","set":{"v":"{{ sum(vars.l, sum(vars.l, sum(vars.l, sum(vars.l, sum(vars.l, #))))) }}"}}]`
		cfg := testConfig(t)
		cfg.Limits.MaxEvalOps, cfg.Limits.MaxRunOps = 1<<62, 1<<62
		cfg.Limits.MaxTestRunWall = time.Hour
		a := startTestApp(t, cfg)
		client := mcpClientWith(t, a.URL()+"/mcp", "", nil)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		req := mcp.CallToolRequest{}
		req.Params.Name = "pilotage_execute"
		req.Params.Arguments = map[string]any{"language": "automation/1", "program": program(steps), "test_run": true}
		if _, err := client.CallTool(ctx, req); err == nil {
			t.Skip("the evaluation ended before its client went away")
		}
		time.Sleep(200 * time.Millisecond)
		c0, t0 := cpuTime(t), time.Now()
		time.Sleep(time.Second)
		if used, over := cpuTime(t)-c0, time.Since(t0); used > over/3 {
			t.Errorf("the server used %v of CPU in the %v after its client went away", used, over)
		}
	})
	t.Run("item 5: @every below a second is refused", func(t *testing.T) {
		for _, spec := range []string{"@every -1s", "@every 1ns"} {
			out, _ := call(t, guest, "pilotage_validate", map[string]any{"language": "automation/1",
				"program": map[string]any{"name": "c", "triggers": []any{map[string]any{"id": "c", "cron": spec}}, "steps": []any{map[string]any{"id": "x", "stop": ""}}}})
			b, _ := json.Marshal(out["diagnostics"])
			if out["valid"] != false || !strings.Contains(string(b), `"bad_cron"`) || !strings.Contains(string(b), "whole number of seconds") {
				t.Errorf("%s: valid %v diagnostics %s", spec, out["valid"], b)
			}
		}
	})
}

// mcpClientWith is mcpClient with a bearer token ("": none) and an HTTP
// client (nil: the default).
func mcpClientWith(t *testing.T, url, token string, hc *http.Client) *client.Client {
	t.Helper()
	var opts []transport.StreamableHTTPCOption
	if token != "" {
		opts = append(opts, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	}
	if hc != nil {
		opts = append(opts, transport.WithHTTPBasicClient(hc))
	}
	return mcpClientOpts(t, url, "", opts...)
}
