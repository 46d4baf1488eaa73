package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
)

// runBin runs the binary to completion and returns its stdout, stderr and
// exit code.
func runBin(t *testing.T, bin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// TestCLIHelpVersionAndEnvErrors: what a person meets at the command line
// of the real binary: --version, -h with the subcommands, sim -h with only
// the flags sim uses (and sim refusing the others), and a bad environment
// value named with the form it wants.
func TestCLIHelpVersionAndEnvErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, _, code := runBin(t, bin, nil, args...)
		if code != 0 || !strings.HasPrefix(out, "pilothouse "+engine.Version+" (") || !strings.Contains(out, runtime.Version()) {
			t.Errorf("%v: exit %d, %q", args, code, out)
		}
	}
	out, _, code := runBin(t, bin, nil, "-h")
	for _, want := range []string{"pilothouse stdio", "pilothouse sim", "pilothouse apply", "pilothouse trace", "--version", `"pilothouse serve -h"`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("-h: exit %d, lacks %q:\n%s", code, want, out)
		}
	}
	_, serveHelp, _ := runBin(t, bin, nil, "serve", "-h")
	if !strings.Contains(serveHelp, "--broker-listen") || !strings.Contains(serveHelp, "--data") {
		t.Errorf("serve -h:\n%s", serveHelp)
	}
	_, simHelp, code := runBin(t, bin, nil, "sim", "-h")
	if code != 0 || !strings.Contains(simHelp, "--broker (PILOTHOUSE_BROKER)") || !strings.Contains(simHelp, "--demo-pace") {
		t.Errorf("sim -h: exit %d:\n%s", code, simHelp)
	}
	for _, unused := range []string{"--addr", "--data", "--token", "--broker-listen", "--demo ", "--retention", "--lat"} {
		if strings.Contains(simHelp, unused) {
			t.Errorf("sim -h lists %s, which sim does not use", unused)
		}
	}
	if _, stderr, code := runBin(t, bin, nil, "sim", "--addr", "0.0.0.0:80"); code == 0 || !strings.Contains(stderr, "pilothouse sim has no flag --addr") {
		t.Errorf("sim --addr: exit %d, %q", code, stderr)
	}
	for _, tc := range []struct{ env, want string }{
		{"PILOTHOUSE_DEMO_PACE=fast", `environment variable PILOTHOUSE_DEMO_PACE="fast": want a duration such as "20s"`},
		{"PILOTHOUSE_DEMO=yes", `environment variable PILOTHOUSE_DEMO="yes": want true or false (it sets --demo`},
		{"PILOTHOUSE_LAT=north", `--lat (or PILOTHOUSE_LAT) "north": want a number of degrees`},
	} {
		_, stderr, code := runBin(t, bin, []string{tc.env, "PILOTHOUSE_LON=2"}, "serve", "--data", t.TempDir())
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q, want %q", tc.env, code, stderr, tc.want)
		}
	}
}

// TestStartupLogSaysWhatRuns: the first lines of a serve say which config
// file it read, the data folder, how many principals and devices.
func TestStartupLogSaysWhatRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	cfgFile := filepath.Join(t.TempDir(), "house.yaml")
	body := "principals:\n  - {name: owner, token_sha256: " + engine.HashToken("o") + ", deploy: true}\n  - {name: guest, token_sha256: " + engine.HashToken("g") + "}\n"
	if err := os.WriteFile(cfgFile, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	cmd := exec.Command(bin, "serve", "--config", cfgFile, "--data", data, "--addr", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--demo-pace", "1h")
	line := startedLine(t, cmd)
	for _, want := range []string{"config=" + cfgFile, "data=" + data, "principals=2", "devices=10", "helpers=4", "version=\"pilothouse " + engine.Version,
		"set --tz, or time_zone in the configuration file", "set --lat and --lon"} {
		if !strings.Contains(line, want) {
			t.Errorf("startup line lacks %q:\n%s", want, line)
		}
	}
}

// startedLine starts cmd and returns its "pilothouse started" log line,
// stopping it at the end of the test.
func startedLine(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	lines := startLog(t, cmd)
	return lines[len(lines)-1]
}

// startLog starts cmd and returns its log lines up to "pilothouse
// started", stopping it at the end of the test.
func startLog(t *testing.T, cmd *exec.Cmd) []string {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _, _ = cmd.Process.Wait() })
	found := make(chan []string, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if lines = append(lines, sc.Text()); strings.Contains(sc.Text(), "pilothouse started") {
				found <- lines
				lines = nil
			}
		}
		close(found)
	}()
	select {
	case lines, ok := <-found:
		if !ok {
			t.Fatal("the server exited without logging its start")
		}
		return lines
	case <-time.After(20 * time.Second):
		t.Fatal("no startup line within 20s")
	}
	return nil
}

// logValue finds key=value in log lines (text handler, unquoted values).
func logValue(lines []string, key string) string {
	for _, l := range lines {
		for _, f := range strings.Fields(l) {
			if v, ok := strings.CutPrefix(f, key+"="); ok {
				return v
			}
		}
	}
	return ""
}

func TestFormatVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	want := "pilothouse " + engine.Version + " (module v1.2.3, revision 0123456789ab (2026-01-02T03:04:05Z, modified), go1.99, Pilotage 1.1)"
	if got := formatVersion(bi, true); got != want {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
	if got := formatVersion(nil, false); got != "pilothouse "+engine.Version {
		t.Errorf("without build info: %s", got)
	}
}
