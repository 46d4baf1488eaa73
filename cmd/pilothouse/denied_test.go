package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
)

// TestRefusalsDoNotFillTheDisk: a guest's refused deploys are stored (an
// operator sees them) up to 50 per principal within the retention; past
// that a refusal is answered as always, its trace says it was not stored,
// and /healthz counts it. Round-2 attack: 40,000 refused executes stored
// 28 MB in 29 s.
func TestRefusalsDoNotFillTheDisk(t *testing.T) {
	cfg := testConfig(t)
	twoPrincipals(cfg)
	a := startTestApp(t, cfg)
	guest := mcpClientWith(t, a.URL()+"/mcp", "guest-token", nil)
	var first, last string
	var lastStats map[string]any
	for i := range 60 {
		var prog map[string]any
		_ = json.Unmarshal([]byte(fmt.Sprintf(`{"name":"g%d","triggers":[{"id":"t","cron":"0 3 1 1 *"}],"steps":[{"id":"a","set":{"v":"x"}}]}`, i)), &prog)
		out, _ := call(t, guest, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog})
		o, _ := out["outcome"].(map[string]any)
		if o["status"] != "denied" {
			t.Fatalf("deploy %d by a guest: %v", i, out)
		}
		id, _ := out["run_id"].(string)
		if i == 0 {
			first = id
		}
		last = id
		tr, _ := out["trace"].(map[string]any)
		lastStats, _ = tr["stats"].(map[string]any)
	}
	if got, isErr := call(t, guest, "pilotage_trace", map[string]any{"run_id": first}); isErr {
		t.Errorf("the first refusal is not retrievable: %v", got)
	}
	if lastStats["stored"] != false {
		t.Errorf("the 60th refusal's trace stats: %v, want stored: false with the reason", lastStats)
	}
	if got, isErr := call(t, guest, "pilotage_trace", map[string]any{"run_id": last}); !isErr {
		t.Errorf("the 60th refusal was stored: %.200v", got)
	}
	resp, err := http.Get(a.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Runs struct {
			DeniedUnstored int `json:"denied_unstored"`
		} `json:"runs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || h.Runs.DeniedUnstored != 10 {
		t.Errorf("/healthz runs.denied_unstored = %d (%v), want 10", h.Runs.DeniedUnstored, err)
	}
}
