package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/cmd/pilothouse/internal/rulefile"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestCLIMistakesWithoutServer: what a new user types wrong before any
// server answers is answered in one line with the way out: a flag by the
// closest one, a time zone by the closest IANA names, a YAML rule file by
// file:line:column.
func TestCLIMistakesWithoutServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, env, dir := buildBinary(t), binEnv(t), t.TempDir()
	yamlFile := func(name, body string) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	}
	noServer := "127.0.0.1:1"
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"web port", []string{"serve", "--http", ":9090"}, "pilothouse serve has no flag --http: did you mean --addr? (--addr: HTTP listen address"},
		{"misspelt client flag", []string{"rules", "--sever", noServer}, "pilothouse rules has no flag --sever: did you mean --server?"},
		{"no close flag", []string{"runs", "--zzzzzzzz"}, "pilothouse runs has no flag --zzzzzzzz (`pilothouse runs -h` lists its flags)"},
		{"zone", []string{"serve", "--tz", "Europe/Pari", "--data", dir, "--addr", "127.0.0.1:0"}, `--tz: unknown IANA time zone "Europe/Pari"; did you mean "Europe/Paris"`},
		{"zone in lower case", []string{"serve", "--tz", "europe/paris", "--data", dir, "--addr", "127.0.0.1:0"}, `did you mean "Europe/Paris"`},
		{"yaml syntax", []string{"apply", yamlFile("kitchen.yaml", "name: x\n  bad: [1\n"), "--server", noServer}, "kitchen.yaml:2: mapping values are not allowed"},
		{"yaml list", []string{"test", yamlFile("list.yml", "- id: a\n"), "--server", noServer}, "list.yml:1:1: want a YAML mapping (a rule: name, triggers, steps …), found a list"},
		{"yaml alias", []string{"apply", yamlFile("alias.yaml", "name: &n x\ndescription: *n\n"), "--server", noServer}, "alias.yaml:2:14: an alias (*n): anchors and aliases are not taken"},
		{"yaml key twice", []string{"apply", yamlFile("twice.yaml", "name: x\nname: y\n"), "--server", noServer}, `twice.yaml:2:1: key "name" given twice`},
		{"yaml two documents", []string{"apply", yamlFile("two.yaml", "name: x\n---\nname: y\n"), "--server", noServer}, "two.yaml:2:1: a second YAML document"},
		{"rule file too big", []string{"apply", yamlFile("big.yaml", "name: x\n#"+strings.Repeat("x", rulefile.MaxBytes)+"\n"), "--server", noServer}, "big.yaml: more than 1048576 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, err := runPH(t, bin, env, c.args...)
			if err == nil || !strings.Contains(errOut, c.says) {
				t.Errorf("%v: err=%v, stderr %q, want %q", c.args, err, errOut, c.says)
			}
			if strings.Contains(errOut, "Usage of") || strings.Count(errOut, "\n") > 2 {
				t.Errorf("%v: more than a short error:\n%s", c.args, errOut)
			}
		})
	}
	if out, errOut, err := runPH(t, bin, env, "serve", "-h"); err != nil || !strings.Contains(out+errOut, "--addr") {
		t.Errorf("serve -h no longer lists the flags: %v\n%s%s", err, out, errOut)
	}
}

// TestCLINewUserWithDataFolder follows a new user whose serve runs with
// --data DIR: the commands without it say to give the same --data; with
// it, a YAML rule applies, its test run's trace lists the values its
// condition read, and a sim set that changes nothing says so.
func TestCLINewUserWithDataFolder(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin, env, data := buildBinary(t), binEnv(t), t.TempDir()
	startServe(t, bin, env, data)
	if l, err := net.DialTimeout("tcp", "127.0.0.1:8080", time.Second); err == nil {
		_ = l.Close()
		t.Log("something answers on 127.0.0.1:8080: the default address's message is not checked")
	} else {
		for _, args := range [][]string{{"rules"}, {"runs"}, {"sim", "set", "hall_motion", "occupancy=true"}} {
			_, errOut, err := runPH(t, bin, env, args...)
			if want := "give the same --data DIR here (or PILOTHOUSE_DATA)"; err == nil || !strings.Contains(errOut, want) {
				t.Errorf("%v without --data: err=%v, stderr %q, want %q", args, err, errOut, want)
			}
		}
	}
	ph := func(args ...string) (string, string, error) {
		return runPH(t, bin, env, append(args, "--data", data)...)
	}
	rule := "examples/rules/hall-dark-light.yaml"
	if out, errOut, err := ph("apply", rule); err != nil || !strings.Contains(out, "deployed: rule hall-dark-light installed") {
		t.Fatalf("apply %s: %v\n%s%s", rule, err, out, errOut)
	}
	out, errOut, err := ph("test", rule, "--state", "hall_motion.illuminance=400", "--state", "hall_light.state=OFF")
	id := regexp.MustCompile(`test run (run_\w+): conditions_not_met`).FindStringSubmatch(out)
	if err != nil || id == nil {
		t.Fatalf("test: %v\n%s%s", err, out, errOut)
	}
	out, errOut, err = ph("trace", id[1])
	for _, want := range []string{"dark_or_on [not_met] → false", `read state('hall_light.state') = "OFF"`, "read state('hall_motion.illuminance') = 400"} {
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("trace %s: %v, want %q in\n%s%s", id[1], err, want, out, errOut)
		}
	}

	unchanged := "occupancy was already true: the value did not change, and a state trigger fires only on a change"
	for _, c := range []struct {
		set           []string
		says, saysNot string
	}{
		{set: []string{"occupancy=false"}},
		{set: []string{"occupancy=true", "illuminance=5"}, says: "fired: hall-dark-light success", saysNot: unchanged},
		{set: []string{"occupancy=true"}, says: "fired: nothing within 1.5s: " + unchanged},
		{set: []string{"occupancy=true", "illuminance=6"}, says: unchanged + " (set another value first); for the rest: (no enabled rule"},
	} {
		out, errOut, err := ph(append([]string{"sim", "set", "hall_motion"}, c.set...)...)
		if err != nil || !strings.Contains(out, c.says) || c.saysNot != "" && strings.Contains(out, c.saysNot) {
			t.Errorf("sim set %v: %v, want %q (not %q) in\n%s%s", c.set, err, c.says, c.saysNot, out, errOut)
		}
	}
}

// TestCLIRulesSaysTriggerDeviceOffline: pilothouse rules says a trigger's
// device is offline, as the web rule page does, and stops once it is back.
func TestCLIRulesSaysTriggerDeviceOffline(t *testing.T) {
	a, url := startCLIApp(t)
	if _, err := cli(t, url, "", "apply", filepath.Join("..", "..", "examples", "rules", "hall-motion-light.json")); err != nil {
		t.Fatal(err)
	}
	offline := "hall_motion is offline: its states fire no trigger and read no value meanwhile"
	for _, c := range []struct {
		state string
		says  bool
	}{{"offline", true}, {"online", false}} {
		if err := a.client.Publish(context.Background(), "zigbee2mqtt/hall_motion/availability", []byte(`{"state":"`+c.state+`"}`), 1, true); err != nil {
			t.Fatal(err)
		}
		var out string
		testutil.Eventually(t, 10*time.Second, "rules once hall_motion is "+c.state, func() bool {
			var err error
			out, err = cli(t, url, "", "rules")
			return err == nil && strings.Contains(out, offline) == c.says
		})
		if c.says && !strings.Contains(out, "trigger motion: state hall_motion.occupancy") {
			t.Errorf("rules:\n%s", out)
		}
	}
}

// TestCLIScopedTokenHintsPointToLookup: a token that sees only the garage
// is told to look entries up with pilothouse lookup (the command line's),
// not pilotage_lookup (an MCP tool), and lookup lists what it sees.
func TestCLIScopedTokenHintsPointToLookup(t *testing.T) {
	cfg := testConfig(t)
	const guest = "guest-token-0123456789"
	cfg.Principals = []*engine.Principal{{Name: "owner", TokenHash: engine.HashToken(cliToken), Deploy: true},
		{Name: "guest", TokenHash: engine.HashToken(guest), Deploy: true, Scope: engine.Scope{Areas: []string{"garage"}}}}
	a := startTestApp(t, cfg)
	url := a.URL() + "/mcp"
	run := func(cmd string, args ...string) (string, error) {
		var out, errb bytes.Buffer
		err := runCLI(context.Background(), cmd, append(args, "--server", url, "--token", guest), &out, &errb, strings.NewReader(""))
		return out.String() + errb.String(), err
	}
	testutil.Eventually(t, 10*time.Second, "the garage in the guest's catalog", func() bool {
		out, err := run("lookup", "--tag", "area:garage")
		return err == nil && strings.Contains(out, "garage_door.set")
	})
	rule := writeFile(t, "hall.json", `{"name":"hall","triggers":[{"id":"m","state":"garage_door.state","to":"OPEN"}],"steps":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}`)
	out, err := run("apply", rule)
	if err == nil || !strings.Contains(out, "unknown_name") || !strings.Contains(out, "`pilothouse lookup") || strings.Contains(out, "pilotage_lookup") {
		t.Errorf("apply as the guest: %v\n%s", err, out)
	}
	if out, err := run("lookup", "hall"); err != nil || strings.Contains(out, "hall_light") {
		t.Errorf("lookup hall as the guest: %v\n%s", err, out)
	}
}

// TestCLIHintFor: every form of the validator's pilotage_lookup hint
// becomes a pilothouse lookup command.
func TestCLIHintFor(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"look it up with pilotage_lookup (verb list, q = part of the name)", "look it up with `pilothouse lookup PART_OF_THE_NAME`"},
		{"find one with pilotage_lookup (verb list, kind action)", "find one with `pilothouse lookup --kind action`"},
		{`pilotage_lookup list with tag "area:<x>" or "type:<x>" shows what exists`, "`pilothouse lookup --tag area:<x>` or `--tag type:<x>` shows what exists"},
		{"arguments of x.set: state (see pilotage_lookup get)", "arguments of x.set: state (see `pilothouse lookup ID`)"},
		{`did you mean "hall_light.set"?`, `did you mean "hall_light.set"?`},
	} {
		if got := cliHint(c.in); got != c.want {
			t.Errorf("cliHint(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
