package main

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// binEnv is an environment for the binary that finds no house but the
// test's: its own HOME and data folder, no server or token from the caller.
func binEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(k, "PILOTHOUSE_") && k != "HOME" && k != "XDG_DATA_HOME" {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, "share"))
}

// runPH runs one pilothouse command to its end and returns its output.
func runPH(t *testing.T, bin string, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Dir = env, filepath.Join("..", "..")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// startServe starts "pilothouse serve" on free ports in data with extra
// flags, and returns once it has started.
func startServe(t *testing.T, bin string, env []string, data string, extra ...string) []string {
	t.Helper()
	return startLog(t, newServeCmd(bin, env, data, extra...))
}

// newServeCmd is "pilothouse serve" on free ports in data with extra flags.
func newServeCmd(bin string, env []string, data string, extra ...string) *exec.Cmd {
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--broker-listen", "127.0.0.1:0", "--data", data, "--demo-pace", "1h"}, extra...)
	serve := exec.Command(bin, args...)
	serve.Env = env
	return serve
}

// TestSimFiresDemoRule is the quick start's path through the real binary:
// serve (with a principal, so the command line needs the local token it
// finds in the data folder's server.json), apply the example rule, drive
// the demo's motion sensor with "sim set", and the rule fires; "sim
// press" presses the remote; bad input is refused naming what is allowed.
func TestSimFiresDemoRule(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, env, data := buildBinary(t), binEnv(t), t.TempDir()
	cfgFile := filepath.Join(t.TempDir(), "house.yaml")
	if err := os.WriteFile(cfgFile, []byte("principals:\n  - {name: owner, token_sha256: "+engine.HashToken("owner-secret-0123456789")+", deploy: true}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	startServe(t, bin, env, data, "--config", cfgFile)
	ph := func(args ...string) (string, string, error) {
		return runPH(t, bin, env, append(args, "--data", data)...)
	}

	if out, errOut, err := ph("apply", "examples/rules/hall-motion-light.json"); err != nil || !strings.Contains(out, "deployed: rule hall-motion-light installed") {
		t.Fatalf("apply: %v\n%s%s", err, out, errOut)
	}
	t0 := time.Now()
	out, errOut, err := ph("sim", "set", "hall_motion", "occupancy=true", "illuminance=12")
	if err != nil || !strings.Contains(out, `"occupancy":true`) || !strings.Contains(out, `"illuminance":12`) || !strings.Contains(out, "fired: hall-motion-light success (run ") {
		t.Fatalf("sim set: %v\n%s%s", err, out, errOut)
	}
	testutil.Eventually(t, 10*time.Second, "the firing in pilothouse rules", func() bool {
		out, _, err := ph("rules")
		return err == nil && strings.Contains(out, "fired ") && strings.Contains(out, ": success")
	})
	t.Logf("sim set → firing listed in %s", time.Since(t0).Round(time.Millisecond))
	if out, errOut, err := ph("sim", "press", "bedroom_remote", "single"); err != nil || !strings.Contains(out, `bedroom_remote: pressed single (action "toggle": a rule's event trigger takes "value": "toggle")`) ||
		!strings.Contains(out, "fired: nothing within 1.5s") {
		t.Fatalf("sim press: %v\n%s%s", err, out, errOut)
	}
	// The connection flags may come before the verb too ("sim --data X
	// set ..." used to run the simulator and print its usage).
	for _, early := range [][]string{
		{"sim", "--data", data, "set", "hall_motion", "occupancy=false"},
		{"sim", "--data=" + data, "press", "bedroom_remote", "on"},
	} {
		if out, errOut, err := runPH(t, bin, env, early...); err != nil || !strings.Contains(out, "state now: ") {
			t.Errorf("%v: %v\n%s%s", early, err, out, errOut)
		}
	}
	for _, bad := range []struct {
		args []string
		says string
	}{
		{[]string{"sim", "set", "hall_motion", "colour=1"}, "hall_motion has no property \"colour\"; its properties: battery, illuminance, linkquality, occupancy"},
		{[]string{"sim", "set", "hall_motion", "occupancy=maybe"}, "hall_motion.occupancy: want true or false"},
		{[]string{"sim", "set", "attic_fan", "state=ON"}, "no device \"attic_fan\"; the demo devices: hall_light"},
		{[]string{"sim", "press", "bedroom_remote", "explode"}, "want one of [on off"},
		{[]string{"sim", "set", "hall_motion"}, "usage: pilothouse sim"},
		{[]string{"sim", "set", "hall_motion", "occupancy"}, "want PROPERTY=VALUE"},
	} {
		_, errOut, err := ph(bad.args...)
		if err == nil || !strings.Contains(errOut, bad.says) {
			t.Errorf("%v: err=%v, stderr %q, want it to say %q", bad.args, err, errOut, bad.says)
		}
	}
}

// TestHouseAPIAccess: the house API takes /mcp's tokens, lets only the
// owner drive the demo, refuses browsers, and has no demo to drive when
// the demo is off.
func TestHouseAPIAccess(t *testing.T) {
	cfg := testConfig(t)
	cfg.Principals = []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken("owner-token"), Deploy: true, Admin: true},
		{Name: "guest", TokenHash: engine.HashToken("guest-token")},
	}
	a := startTestApp(t, cfg)
	off := testConfig(t)
	off.Demo = false
	noDemo := startTestApp(t, off)
	body := `{"device":"porch_light","set":{"state":"ON"}}`
	for _, c := range []struct {
		name, url, token, origin, body string
		code                           int
		says                           string
	}{
		{"no token", a.URL(), "", "", body, http.StatusUnauthorized, "bearer token is required"},
		{"wrong token", a.URL(), "nope", "", body, http.StatusUnauthorized, "bearer token is required"},
		{"guest", a.URL(), "guest-token", "", body, http.StatusForbidden, "only the owner"},
		{"browser", a.URL(), "owner-token", "http://evil.example", body, http.StatusForbidden, "not browsers"},
		{"owner", a.URL(), "owner-token", "", body, http.StatusOK, `"state":"ON"`},
		{"bad json", a.URL(), "owner-token", "", `{"device":`, http.StatusBadRequest, "want {"},
		{"both", a.URL(), "owner-token", "", `{"device":"bedroom_remote","press":"on","set":{"a":1}}`, http.StatusBadRequest, "not both"},
		{"demo off", noDemo.URL(), "", "", body, http.StatusNotFound, "the demo house is off"},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, c.url+"/api/sim", strings.NewReader(c.body))
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			if resp.StatusCode != c.code || !strings.Contains(b.String(), c.says) {
				t.Fatalf("%d %s, want %d saying %q", resp.StatusCode, b.String(), c.code, c.says)
			}
		})
	}
	if st := a.sim.State("porch_light"); st["state"] != "ON" {
		t.Errorf("porch_light after the owner's set: %v", st)
	}
}
