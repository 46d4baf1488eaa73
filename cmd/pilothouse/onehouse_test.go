package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// runBinFor runs the binary to completion, killing it after d (a second
// house that starts never ends by itself), and returns its stderr and exit
// code (-1: it was still running after d).
func runBinFor(t *testing.T, bin string, d time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = t.TempDir()
	var errb bytes.Buffer
	cmd.Stderr = &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return errb.String(), -1
	case errors.As(err, &ee):
		return errb.String(), ee.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v", args, err)
	}
	return errb.String(), 0
}

// TestOneHouseWhileTheServeIsFrozen: a serve that does not answer (frozen
// with SIGSTOP, as a busy one is to a health check) still runs its house:
// a second serve refuses, naming its pid and address; pilothouse stdio
// bridges to it and tells its client the serve sent no answer in time
// instead of starting a second engine on the same SQLite files; once the
// serve answers again, stdio works through it.
func TestOneHouseWhileTheServeIsFrozen(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	data := t.TempDir()
	serve, url := startBinary(t, bin, data)
	if err := serve.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = serve.Process.Signal(syscall.SIGCONT)
		}
	}
	t.Cleanup(thaw)

	stderr, code := runBinFor(t, bin, 20*time.Second, "serve", "--data", data, "--addr", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--log-level", "warn")
	want := fmt.Sprintf("another pilothouse (pid %d, pilothouse serve at %s/mcp) already serves the data folder %s", serve.Process.Pid, url, data)
	if code <= 0 || !strings.Contains(stderr, want) {
		t.Fatalf("a second serve beside a frozen one: exit %d (-1: it ran), stderr:\n%s\nwant %q", code, stderr, want)
	}

	args := []string{"--data", data, "--broker-listen", "127.0.0.1:0", "--log-level", "warn", "--stdio-request-timeout", "1s"}
	_, err := stdioClient(t, bin, t.TempDir(), nil, "2025-11-25", args...)
	if err == nil || !strings.Contains(err.Error(), "sent no answer within 1s (stdio_request_timeout)") {
		t.Fatalf("stdio beside a frozen serve: initialize %v, want the bridge's timeout", err)
	}

	thaw()
	c, err := stdioClient(t, bin, t.TempDir(), nil, "2025-11-25", args...)
	if err != nil {
		t.Fatalf("stdio once the serve answers: %v", err)
	}
	deployNamed(t, c, "through-the-bridge")
	if names := ruleList(t, mcpClient(t, url+"/mcp", nil, "")); !has(names, "through-the-bridge") {
		t.Fatalf("the serve does not have the rule stdio deployed: %v", names)
	}
}

// TestStdioHouseIsTheOnlyHouse: a house run by pilothouse stdio (no serve)
// holds the data folder too: a serve refuses, and a second stdio says who
// runs it instead of starting a second engine.
func TestStdioHouseIsTheOnlyHouse(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	data := t.TempDir()
	args := []string{"--data", data, "--broker-listen", "127.0.0.1:0", "--log-level", "warn", "--demo-pace", "1h"}
	first, err := stdioClient(t, bin, t.TempDir(), nil, "2025-11-25", args...)
	if err != nil {
		t.Fatalf("the first stdio: %v", err)
	}
	deployNamed(t, first, "from-the-first")
	holder := readHolder(data)
	if holder.PID == 0 || holder.PID == os.Getpid() || holder.Command != "stdio" {
		t.Fatalf("the lock's holder: %+v", holder)
	}
	want := fmt.Sprintf("another pilothouse (pid %d, pilothouse stdio) already serves the data folder %s", holder.PID, data)
	stderr, code := runBinFor(t, bin, 20*time.Second, "serve", "--data", data, "--addr", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--log-level", "warn")
	if code <= 0 || !strings.Contains(stderr, want) {
		t.Fatalf("serve beside a stdio house: exit %d (-1: it ran), stderr:\n%s\nwant %q", code, stderr, want)
	}
	_, err = stdioClient(t, bin, t.TempDir(), nil, "2025-11-25", args...)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a second stdio: initialize %v, want %q", err, want)
	}
}

// TestStdioWaitsForAStartingServe: the house's lock is held by a serve that
// has not announced where it answers yet (it is starting); stdio waits for
// it, then bridges to it, instead of running a second house.
func TestStdioWaitsForAStartingServe(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	cfg := testConfig(t)
	lock, err := lockHouse(cfg.DataDir, "serve", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.release()
	a := startTestApp(t, cfg) // this process is the starting serve
	c, err := client.NewStdioMCPClient(bin, nil, "stdio", "--data", cfg.DataDir, "--broker-listen", "127.0.0.1:0", "--stdio-request-timeout", "30s")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	stderr, _ := client.GetStderr(c)
	waiting := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "has not said where it answers yet: waiting") {
				waiting <- true
				return
			}
		}
		waiting <- false
	}()
	select {
	case ok := <-waiting:
		if !ok {
			t.Fatal("stdio ended without waiting for the starting serve")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("stdio did not say it waits for the starting serve within 20s")
	}
	a.announce()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := mcp.InitializeRequest{}
	req.Params.ClientInfo = mcp.Implementation{Name: "desktop-assistant", Version: "1"}
	req.Params.ProtocolVersion = "2025-11-25"
	if _, err := c.Initialize(ctx, req); err != nil {
		t.Fatalf("initialize once the serve announced itself: %v", err)
	}
	deployNamed(t, c, "after-the-wait")
	if names := ruleList(t, mcpClient(t, a.URL()+"/mcp", nil, "")); !has(names, "after-the-wait") {
		t.Fatalf("the serve does not have the rule stdio deployed: %v", names)
	}
}

// TestRemovedLockFileStillLocks: an attacker round removed the lock file
// while a serve ran and started a second house on the same folder; the
// lock on the folder itself still holds.
func TestRemovedLockFileStillLocks(t *testing.T) {
	dir := t.TempDir()
	held, err := lockHouse(dir, "serve", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer held.release()
	if err := os.Remove(filepath.Join(dir, lockFile)); err != nil {
		t.Fatal(err)
	}
	if l, err := lockHouse(dir, "serve", quietLogger()); !errors.Is(err, errHeld) {
		l.release()
		t.Fatalf("with the lock file removed, a second lock: %v, want errHeld", err)
	}
	held.release()
	l, err := lockHouse(dir, "serve", quietLogger())
	if err != nil {
		t.Fatalf("after the holder released it: %v", err)
	}
	l.release()
}
