package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// buildBinary builds the real pilothouse binary once per test process.
func buildBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "pilothouse-bin-*")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "pilothouse")
		build := exec.Command("go", "build", "-o", builtBin, ".")
		build.Stderr = os.Stderr
		buildErr = build.Run()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return builtBin
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startBinary runs the real pilothouse binary on a data folder.
func startBinary(t *testing.T, bin, data string) (*exec.Cmd, string) {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(bin, "serve", "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--broker-listen", "127.0.0.1:0",
		"--data", data, "--demo-pace", "1h", "--log-level", "warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	testutil.Eventually(t, 20*time.Second, "the server to answer /healthz", func() bool {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return cmd, url
}

// TestKill9RestartRecordsInterruptedAndRearms: kill -9 during a firing,
// start again → the rule is re-armed from SQLite, cron continues, and the
// firing the crash cut short is recorded as interrupted.
func TestKill9RestartRecordsInterruptedAndRearms(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	data := t.TempDir()
	cmd, url := startBinary(t, bin, data)
	c := mcpClient(t, url+"/mcp", nil, "")
	var prog map[string]any
	_ = json.Unmarshal([]byte(`{"name":"slow-tick","mode":"parallel","max":3,
	  "triggers":[{"id":"tick","cron":"* * * * * *"}],
	  "steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}},{"id":"hold","delay":"1h"}]}`), &prog)
	dep, _ := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog})
	if dep["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("deploy: %v", dep)
	}
	firings := func(cl interface{}) []map[string]any {
		rl, _ := call(t, c, "pilothouse_rules", map[string]any{"last_firings": 20})
		var out []map[string]any
		for _, r := range rl["rules"].([]any) {
			for _, f := range r.(map[string]any)["last_firings"].([]any) {
				out = append(out, f.(map[string]any))
			}
		}
		return out
	}
	testutil.Eventually(t, 10*time.Second, "a running firing", func() bool {
		for _, f := range firings(c) {
			if f["status"] == "running" {
				return true
			}
		}
		return false
	})
	// Crash.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = cmd.Process.Wait()

	_, url = startBinary(t, bin, data)
	c = mcpClient(t, url+"/mcp", nil, "")
	rl, _ := call(t, c, "pilothouse_rules", map[string]any{"last_firings": 50})
	rule := rl["rules"].([]any)[0].(map[string]any)
	if rule["status"] != "enabled" || rule["next_fire"] == nil {
		t.Fatalf("after restart the rule is not armed: %v", rule)
	}
	interrupted := 0
	for _, f := range firings(c) {
		if f["status"] == "interrupted" {
			interrupted++
		}
	}
	if interrupted == 0 {
		t.Fatalf("no firing recorded as interrupted: %v", firings(c))
	}
	// Cron continues: a new firing after the restart.
	testutil.Eventually(t, 10*time.Second, "a firing after the restart", func() bool {
		for _, f := range firings(c) {
			if f["status"] == "running" {
				return true
			}
		}
		return false
	})
}
