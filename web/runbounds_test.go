package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/storage"
)

// TestRunPageIsBounded: the run page of a 24 MB envelope (stored before
// sizes counted JSON escapes, or under a raised max_run_bytes) rendered
// 24 MB of HTML; this one is 8 MB. The page shows each value cut with "… N bytes more" and
// a link to the raw JSON, a bounded number of steps, and stays small; the
// raw JSON is there in full, for its principal only.
func TestRunPageIsBounded(t *testing.T) {
	f := newFixture(t, testPrincipals())
	id := storage.NewRunID()
	big := strings.Repeat("\x01", 200_000)
	steps := []map[string]any{{"id": "triggers", "outcome": map[string]any{"ok": true, "status": "success"},
		"decisions": []any{map[string]any{"at": "triggers", "took": "t", "because": strings.Repeat("because ", 20000)}}}}
	for i := range 3 {
		steps = append(steps, map[string]any{"id": fmt.Sprintf("big%d", i), "input": map[string]any{"v": big},
			"output": map[string]any{"v": big}, "outcome": map[string]any{"ok": true, "status": "success"}})
	}
	for i := range 1500 {
		steps = append(steps, map[string]any{"id": fmt.Sprintf("r#%d", i+1), "output": i, "outcome": map[string]any{"ok": true, "status": "success"}})
	}
	steps = append(steps, map[string]any{"id": "last", "outcome": map[string]any{"ok": false, "status": "failed", "error": "the last one failed"}})
	env, _ := json.Marshal(map[string]any{"run_id": id, "outcome": map[string]any{"ok": false, "status": "failed", "error": "the last one failed"},
		"output": map[string]any{"vars": map[string]any{"v": big}}, "trace": map[string]any{"level": "full", "steps": steps}})
	err := f.store.InsertRuns(context.Background(), []storage.Run{{ID: id, Principal: "owner", Rule: "r", Kind: "test",
		Status: "failed", Started: time.Now(), Level: "full", Envelope: env, Expires: time.Now().Add(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	owner := f.client()
	owner.login(ownerTok)
	start := time.Now()
	code, body, _ := owner.get("/runs/" + id)
	if code != http.StatusOK {
		t.Fatalf("GET /runs/%s: %d", id, code)
	}
	t.Logf("envelope %d kB, page %d kB in %v", len(env)>>10, len(body)>>10, time.Since(start))
	if len(body) > 1<<20 {
		t.Errorf("the page is %d bytes", len(body))
	}
	raw := "/runs/" + id + "/json"
	mustContain(t, "run page", body, "bytes more", `href="`+raw+`"`, "more steps", `href="#step-1505"`, `id="step-1505"`, "the last one failed")

	code, rawBody, h := owner.get(raw)
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
		t.Fatalf("GET %s: %d %s", raw, code, h.Get("Content-Type"))
	}
	var got struct {
		Trace struct{ Steps []map[string]any } `json:"trace"`
	}
	if err := json.Unmarshal([]byte(rawBody), &got); err != nil || len(got.Trace.Steps) != len(steps) {
		t.Errorf("raw JSON: %v, %d steps", err, len(got.Trace.Steps))
	}
	guest := f.client()
	guest.login(guestTok)
	if code, _, _ := guest.get(raw); code != http.StatusNotFound {
		t.Errorf("another principal's raw JSON: %d", code)
	}
}
