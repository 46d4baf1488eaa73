package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotclient"
)

// TestNtfyFailureVisible: a push the ntfy server refuses fails the firing's
// step with the reason in the run and its trace, and /healthz counts it.
func TestNtfyFailureVisible(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "topic is reserved", http.StatusForbidden)
	}))
	defer refusing.Close()
	cfg := testConfig(t)
	cfg.Notify = []devices.NotifyChannel{{ID: "notify.phone", Name: "My phone", Ntfy: refusing.URL + "/house", Priority: "high"}}
	cfg.Approval = engine.ApprovalPolicy{Require: []string{}} // the deploy sets the scene; the gate has its own tests
	a := startTestApp(t, cfg)
	url := a.URL() + "/mcp"
	c := dialT(t, url)
	prog, err := os.ReadFile(filepath.Join(repoRoot, "examples", "rules", "motion-notify.json"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the demo catalog", func() bool {
		_, err := c.Get(context.Background(), "hall_motion.occupancy")
		return err == nil
	})
	res, err := c.Run(context.Background(), prog, pilotclient.RunOptions{Approve: func(context.Context, *pilotclient.GateRequest) (bool, error) { return true, nil }})
	if err != nil || pilotclient.Verify(res.Execution, false) != nil {
		t.Fatalf("deploy: %v %+v", err, res)
	}
	if err := a.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": true}); err != nil {
		t.Fatal(err)
	}
	var out string
	testutil.Eventually(t, 10*time.Second, "the failed firing in pilothouse runs", func() bool {
		out, err = cli(t, url, "", "runs", "--kind", "firing")
		return err == nil && strings.Contains(out, "firing  failed  motion-notify")
	})
	id := strings.Fields(strings.Split(out, "\n")[1])[5]
	tr, err := cli(t, url, "", "trace", id)
	if err != nil || !strings.Contains(tr, "notify.phone: ntfy: answered 403 Forbidden (not retried) (1 attempt in") {
		t.Errorf("trace %s: %v\n%s", id, err, tr)
	}
	_, h := getHealth(t, a.URL())
	if st := h.Notify["notify.phone"]; st.Failed != 1 || !strings.Contains(st.LastError, "403") {
		t.Errorf("/healthz notify: %+v", h.Notify)
	}
}
