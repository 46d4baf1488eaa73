package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestLogbookOneRowPerHelperEvent: a timer that ends and fires a rule is
// one logbook row (the helper's, with its cause), not also a device
// event row; the firing it causes is one row too.
func TestLogbookOneRowPerHelperEvent(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	c := mcpClient(t, a.URL()+"/mcp", nil, "")
	for _, h := range []map[string]any{{"id": "tea", "kind": "timer", "duration": "PT1S"}, {"id": "cups", "kind": "counter"}} {
		if out, isErr := call(t, c, "pilothouse_helpers", map[string]any{"verb": "create", "helper": h}); isErr {
			t.Fatalf("create %v: %v", h["id"], out)
		}
	}
	var prog map[string]any
	_ = json.Unmarshal([]byte(`{"name":"tea-ready","triggers":[{"id":"f","event":"tea.finished"}],"steps":[{"id":"count","call":"cups.increment"}]}`), &prog)
	if dep, _ := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog}); dep["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("deploy: %v", dep)
	}
	if err := a.devs.Call(context.Background(), "tea.start", nil); err != nil {
		t.Fatal(err)
	}
	var entries []engine.LogEntry
	testutil.Eventually(t, 15*time.Second, "the firing in the logbook", func() bool {
		a.eng.Flush()
		a.eng.FlushLogbook()
		p, err := a.eng.Logbook(context.Background(), engine.LogQuery{Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		entries = p.Entries
		for _, en := range entries {
			if en.Kind == "firing" && en.Rule == "tea-ready" {
				return true
			}
		}
		return false
	})
	var rows []string
	firings := map[string]int{}
	for _, en := range entries {
		if en.Kind == "firing" {
			firings[en.RunID]++
		}
		if en.Device == "tea" && strings.Contains(en.Text, "finished") {
			rows = append(rows, en.Kind+": "+en.Text)
		}
	}
	if len(rows) != 1 || !strings.HasPrefix(rows[0], "helper: tea: active → idle, finished") {
		t.Errorf("the timer's end is %d logbook rows, want one helper row: %q", len(rows), rows)
	}
	for run, n := range firings {
		if n != 1 {
			t.Errorf("firing %s is %d logbook rows", run, n)
		}
	}
}
