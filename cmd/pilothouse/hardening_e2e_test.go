package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestHardeningOverMCP drives issue 14's items 1, 5, 10 and 13 through the
// real interface: the mcp-go client over streamable HTTP, as the read-only
// guest where the issue used one (a 214-byte test run took the server
// down) and as the owner for deploys.
func TestHardeningOverMCP(t *testing.T) {
	cfg := testConfig(t)
	twoPrincipals(cfg)
	a := startTestApp(t, cfg)
	owner := mcpClient(t, a.URL()+"/mcp", map[string]string{"Authorization": "Bearer owner-token"}, "")
	guest := mcpClient(t, a.URL()+"/mcp", map[string]string{"Authorization": "Bearer guest-token"}, "")
	testutil.Eventually(t, 10*time.Second, "the demo catalog", func() bool {
		got, isErr := call(t, guest, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": "hall_motion.occupancy"})
		return !isErr && got["entry"] != nil
	})
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
