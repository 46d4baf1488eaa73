package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// smallDisk mounts a 4 MiB tmpfs for the test, or skips it loudly where
// mounting is not permitted (not root, no CAP_SYS_ADMIN).
func smallDisk(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("SKIPPED: the full-disk start (issue 28 item 7) needs a size-limited tmpfs and mount is not permitted here: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes zeros into dir until the disk is full.
func fillDisk(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, "filler"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			return
		}
	}
}

// serveOn starts the binary on data with a known broker port and returns
// its URL once /healthz answers past the start (a degraded house answers 503), and
// a channel closed when it has exited.
func serveOn(t *testing.T, bin, data string, brokerPort int) (*exec.Cmd, string, <-chan struct{}) {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(bin, "serve", "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--broker-listen", fmt.Sprintf("127.0.0.1:%d", brokerPort),
		"--data", data, "--demo-pace", "1h", "--log-level", "warn")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited, gone := make(chan error, 1), make(chan struct{})
	go func() { exited <- cmd.Wait(); close(gone) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-gone })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	testutil.Eventually(t, 20*time.Second, "the server to answer /healthz", func() bool {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the server exited: %v", err)
		default:
		}
		code, status := getHealthOK(url)
		return code != 0 && !strings.HasPrefix(status, "starting: ")
	})
	return cmd, url, gone
}

// TestFullDiskStartsDegraded: power cut (kill -9) during firings, the disk
// fills up, the house starts again: it answers /healthz with the storage
// problem, its rule is armed and fires (the command reaches the broker).
// The server.json the crash left is rewritten in place; when there is none,
// /healthz says it could not be written until there is room again.
func TestFullDiskStartsDegraded(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	for _, tc := range []struct {
		name         string
		lostEndpoint bool
	}{{"server.json left by the crash", false}, {"server.json lost", true}} {
		t.Run(tc.name, func(t *testing.T) {
			disk := smallDisk(t)
			data := filepath.Join(disk, "house")
			brokerPort := freePort(t)
			crashWhileFiring(t, data, brokerPort)
			if tc.lostEndpoint {
				if err := os.Remove(filepath.Join(data, endpointFile)); err != nil {
					t.Fatal(err)
				}
			}
			fillDisk(t, disk)
			url := startsDegraded(t, data, brokerPort)
			if !tc.lostEndpoint {
				if h := healthOf(t, url); h.Endpoint == nil || !h.Endpoint.OK {
					t.Fatalf("server.json not rewritten on the full disk: %+v", h.Endpoint)
				}
				return
			}
			if h := healthOf(t, url); h.Endpoint == nil || h.Endpoint.OK || !strings.Contains(h.Endpoint.Error, "no space left on device") {
				t.Fatalf("server.json could not be written: /healthz says %+v", h.Endpoint)
			}
			if err := os.Remove(filepath.Join(disk, "filler")); err != nil {
				t.Fatal(err)
			}
			testutil.Eventually(t, 2*announceRetry, "server.json written once there is room", func() bool {
				h := healthOf(t, url)
				return h.Endpoint != nil && h.Endpoint.OK
			})
		})
	}
}

// crashWhileFiring serves data, deploys a rule that fires every second and
// holds its firings, and kills the server (a power cut) while one runs.
func crashWhileFiring(t *testing.T, data string, brokerPort int) {
	t.Helper()
	first, url, gone := serveOn(t, buildBinary(t), data, brokerPort)
	c := mcpClient(t, url+"/mcp", nil, "")
	var prog map[string]any
	_ = json.Unmarshal([]byte(`{"name":"tick","mode":"parallel","max":3,"triggers":[{"id":"tick","cron":"* * * * * *"}],
	  "steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}},{"id":"hold","delay":"1h"}]}`), &prog)
	if dep, _ := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog}); dep["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("deploy: %v", dep)
	}
	testutil.Eventually(t, 10*time.Second, "a running firing", func() bool {
		rl, _ := call(t, c, "pilothouse_rules", map[string]any{"last_firings": 5})
		b, _ := json.Marshal(rl)
		return strings.Contains(string(b), `"status":"running"`)
	})
	_ = first.Process.Signal(syscall.SIGKILL)
	<-gone
}

// fullDiskHealth is what the full-disk tests read of /healthz.
type fullDiskHealth struct {
	code    int
	Status  string
	Storage struct {
		OK    bool
		Error string
	}
	Endpoint *endpointHealth
}

func healthOf(t *testing.T, url string) fullDiskHealth {
	t.Helper()
	var h fullDiskHealth
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &h)
	h.code = resp.StatusCode
	return h
}

// startsDegraded starts the server on the full disk and checks it runs
// the house: the storage problem on /healthz, the rule armed, a firing's
// command on the broker.
func startsDegraded(t *testing.T, data string, brokerPort int) string {
	t.Helper()
	_, url, _ := serveOn(t, buildBinary(t), data, brokerPort)
	var fired atomic.Int32
	sub, err := mqtt.Dial(t.Context(), mqtt.Options{Broker: fmt.Sprintf("tcp://127.0.0.1:%d", brokerPort), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	if err := sub.Subscribe("zigbee2mqtt/porch_light/set", 1, func(mqtt.Message) { fired.Add(1) }); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 15*time.Second, "the storage problem on /healthz", func() bool {
		h := healthOf(t, url)
		return h.code == http.StatusServiceUnavailable && h.Status == "storage cannot write" && !h.Storage.OK && strings.Contains(h.Storage.Error, "disk is full")
	})
	c := mcpClient(t, url+"/mcp", nil, "")
	rl, _ := call(t, c, "pilothouse_rules", map[string]any{"last_firings": 0})
	if rule := rl["rules"].([]any)[0].(map[string]any); rule["status"] != "enabled" || rule["next_fire"] == nil {
		t.Fatalf("the rule is not armed after the start on a full disk: %v", rule)
	}
	testutil.Eventually(t, 10*time.Second, "a firing's command on the broker", func() bool { return fired.Load() > 0 })
	return url
}

// TestFullDiskWithoutDatabaseSaysWhy: after a clean stop SQLite has removed
// its write-ahead files and cannot create them on a full disk, so the
// database does not open at all: that start is refused, saying the disk is
// full and why the house cannot run without its database.
func TestFullDiskWithoutDatabaseSaysWhy(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	disk := smallDisk(t)
	bin := buildBinary(t)
	data := filepath.Join(disk, "house")
	first, _, gone := serveOn(t, bin, data, freePort(t))
	_ = first.Process.Signal(os.Interrupt)
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("no clean stop within 10s")
	}
	if _, err := os.Stat(filepath.Join(data, "pilothouse.db-shm")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("SQLite's shared-memory file is still there after a clean stop (%v): this start would not need to create it", err)
	}
	fillDisk(t, disk)
	stderr, code := runBinFor(t, bin, 20*time.Second, "serve", "--data", data, "--addr", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--log-level", "warn")
	for _, want := range []string{"opening storage in " + data, "(the disk holding " + data + " is full", "without it no rule can be armed", "free some space"} {
		if code <= 0 || !strings.Contains(stderr, want) {
			t.Fatalf("exit %d (-1: it ran), stderr:\n%s\nwant %q", code, stderr, want)
		}
	}
}
