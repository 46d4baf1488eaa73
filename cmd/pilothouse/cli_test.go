package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotclient"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

const cliToken = "cli-test-token"

// startCLIApp starts a server that requires a bearer token and waits for
// the demo catalog.
func startCLIApp(t *testing.T) (*app, string) {
	t.Helper()
	cfg := testConfig(t)
	cfg.Principals = []*engine.Principal{{Name: "owner", TokenHash: engine.HashToken(cliToken), Deploy: true}}
	a := startTestApp(t, cfg)
	url := a.URL() + "/mcp"
	c := dialT(t, url)
	testutil.Eventually(t, 10*time.Second, "the demo catalog", func() bool {
		_, err1 := c.Get(context.Background(), "front_lock.set")
		_, err2 := c.Get(context.Background(), "hall_light.set")
		return err1 == nil && err2 == nil
	})
	return a, url
}

func dialT(t *testing.T, url string) *pilotclient.Client {
	t.Helper()
	c, err := pilotclient.Dial(context.Background(), pilotclient.Options{URL: url, Token: cliToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// cli runs one client command and returns stdout.
func cli(t *testing.T, url, stdin, cmd string, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	args = append(args, "--server", url, "--token", cliToken)
	err := runCLI(context.Background(), cmd, args, &out, &errb, strings.NewReader(stdin))
	if errb.Len() > 0 {
		t.Logf("stderr: %s", errb.String())
	}
	return out.String(), err
}

func ruleNames(t *testing.T, c *pilotclient.Client) []string {
	t.Helper()
	list, err := c.Rules(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range list {
		names = append(names, r.Name)
	}
	return names
}

const lockRule = `{
  "name": "lock-on-motion",
  "description": "Lock the front door when the hall sees motion",
  "triggers": [{"id": "motion", "state": "hall_motion.occupancy", "to": true}],
  "steps": [{"id": "lock", "call": "front_lock.set", "args": {"state": "LOCK"}}]
}`

func TestCLIApplyGatesDestructivePlans(t *testing.T) {
	_, url := startCLIApp(t)
	c := dialT(t, url)
	file := writeFile(t, "lock.json", lockRule)

	out, err := cli(t, url, "n\n", "apply", file)
	if !errors.Is(err, pilotclient.ErrNotApproved) {
		t.Fatalf("apply without approval: err = %v, want ErrNotApproved\n%s", err, out)
	}
	for _, want := range []string{"APPROVAL REQUIRED", "destructive: true", "step lock calls front_lock.set (risk security (destructive))",
		"claims made by the server", "Deploy this rule? [y/N]"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if names := ruleNames(t, c); len(names) != 0 {
		t.Fatalf("refused apply installed %v", names)
	}

	// No answer at all (stdin closed) is a refusal too.
	if _, err := cli(t, url, "", "apply", file); !errors.Is(err, pilotclient.ErrNotApproved) {
		t.Fatalf("apply with empty stdin: %v", err)
	}

	out, err = cli(t, url, "", "apply", file, "--approve")
	if err != nil {
		t.Fatalf("apply --approve: %v\n%s", err, out)
	}
	for _, want := range []string{"approved by policy (--approve)", "deployed: rule lock-on-motion installed as automation.lock-on-motion@",
		"trigger motion: state hall_motion.occupancy"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if names := ruleNames(t, c); len(names) != 1 || names[0] != "lock-on-motion" {
		t.Fatalf("rules after approved apply: %v", names)
	}

	// Interactive yes (the same program again: unchanged), and the
	// management commands.
	if out, err := cli(t, url, "y\n", "apply", file); err != nil || !strings.Contains(out, "lock-on-motion unchanged") {
		t.Fatalf("apply with y: %v\n%s", err, out)
	}
	if out, err := cli(t, url, "", "rules", "disable", "lock-on-motion"); err != nil || out != "rule lock-on-motion: disabled\n" {
		t.Fatalf("rules disable: %v %q", err, out)
	}
	if out, err := cli(t, url, "", "rules"); err != nil || !strings.Contains(out, "lock-on-motion  disabled  risk security") {
		t.Fatalf("rules: %v %q", err, out)
	}
	if out, err := cli(t, url, "", "rules", "remove", "lock-on-motion"); err != nil || out != "rule lock-on-motion: removed\n" {
		t.Fatalf("rules remove: %v %q", err, out)
	}
	_, err = cli(t, url, "", "rules", "enable", "lock-on-motion")
	if !pilotclient.IsKind(err, "not_found") {
		t.Fatalf("enable a removed rule: %v", err)
	}
}

func TestCLIApplyLowRiskNeedsNoApproval(t *testing.T) {
	_, url := startCLIApp(t)
	out, err := cli(t, url, "", "apply", writeFile(t, "motion.json", motionLight))
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	if strings.Contains(out, "APPROVAL") || !strings.Contains(out, "max_risk: control") {
		t.Fatalf("a control-risk plan was gated or not shown:\n%s", out)
	}
	m := regexp.MustCompile(`\(run (\S+)\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no run id in %q", out)
	}
	tr, err := cli(t, url, "", "trace", m[1], "--level", "summary")
	if err != nil || !strings.Contains(tr, "run "+m[1]+": success") || !strings.Contains(tr, "install [success]") {
		t.Fatalf("trace: %v\n%s", err, tr)
	}
	if _, err := cli(t, url, "", "trace", "r-nope"); !pilotclient.IsKind(err, "not_found") {
		t.Fatalf("trace of an unknown run: %v", err)
	}
}

func TestCLIApplyPrintsDiagnosticsWithExcerpt(t *testing.T) {
	_, url := startCLIApp(t)
	bad := strings.Replace(motionLight, `"hall_light.set"`, `"hall_lite.set"`, 1)
	out, err := cli(t, url, "", "apply", writeFile(t, "bad.json", bad), "--approve")
	if err == nil || !strings.Contains(err.Error(), "is invalid (1 error): nothing was deployed") {
		t.Fatalf("apply of an invalid program: %v\n%s", err, out)
	}
	for _, want := range []string{"error unknown_name at /steps/0/call: call \"hall_lite.set\" is not in the catalog", "    hint: ", `    | "hall_lite.set"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestCLIApplyRecoversFromDrift changes the catalog between validate and
// execute (installing another rule adds an automation entry): the client
// re-looks-up, re-validates, re-gates and retries exactly once.
func TestCLIApplyRecoversFromDrift(t *testing.T) {
	_, url := startCLIApp(t)
	c := dialT(t, url)
	n, serial := 0, 0
	drifter := func(every bool) func(ctx context.Context, attempt int) error {
		return func(ctx context.Context, attempt int) error {
			n++
			if attempt > 1 && !every {
				return nil
			}
			serial++
			prog := strings.Replace(motionLight, "hall-motion-light", fmt.Sprintf("drift-%d", serial), 1)
			_, err := c.Execute(ctx, pilotclient.ExecuteRequest{Program: []byte(prog), IdempotencyKey: pilotclient.NewKey()})
			return err
		}
	}
	t.Cleanup(func() { cliHooks.beforeExecute = nil })

	cliHooks.beforeExecute = drifter(false)
	out, err := cli(t, url, "", "apply", writeFile(t, "lock.json", lockRule), "--approve")
	if err != nil {
		t.Fatalf("apply across drift: %v\n%s", err, out)
	}
	if n != 2 || strings.Count(out, "catalog drift:") != 1 || !strings.Contains(out, "looked up front_lock.set again") ||
		!strings.Contains(out, "re-validated against the current catalog") || !strings.Contains(out, "deployed: rule lock-on-motion") {
		t.Fatalf("want exactly one retry (hook ran %d times):\n%s", n, out)
	}

	// Drift on every attempt: one retry, then give up with nothing installed.
	n = 0
	cliHooks.beforeExecute = drifter(true)
	out, err = cli(t, url, "", "apply", writeFile(t, "motion.json", motionLight))
	if err == nil || !strings.Contains(err.Error(), "drifted again after one retry") || n != 2 {
		t.Fatalf("double drift: err=%v hook ran %d times\n%s", err, n, out)
	}
	for _, name := range ruleNames(t, c) {
		if name == "hall-motion-light" {
			t.Fatal("a drifted apply installed the rule")
		}
	}
}

// TestCLITestGolden test-runs the motion rule with a fixed scenario.
func TestCLITestGolden(t *testing.T) {
	_, url := startCLIApp(t)
	prog := `{
  "name": "hall-motion-night",
  "triggers": [{"id": "motion", "state": "hall_motion.occupancy", "to": true}],
  "steps": [
    {"id": "late", "if": "hour(now()) >= 23",
      "then": [{"id": "dim", "call": "hall_light.set", "args": {"state": "ON", "brightness": 20}}],
      "else": [{"id": "bright", "call": "hall_light.set", "args": {"state": "ON", "brightness": 200}}]},
    {"id": "blink", "repeat": {"count": 2}, "do": [
      {"id": "toggle", "call": "porch_light.set", "args": {"state": "TOGGLE"}}
    ]},
    {"id": "remember", "set": {"who": "{{ trigger.id }}"}}
  ]
}`
	out, err := cli(t, url, "", "test", writeFile(t, "motion.json", prog), "--trigger", "motion", "--value", "true",
		"--state", "hall_light.state=OFF", "--now", "2026-01-15T23:30:00Z")
	if err != nil {
		t.Fatalf("test: %v\n%s", err, out)
	}
	got := regexp.MustCompile(`test run \S+:`).ReplaceAllString(out, "test run <run-id>:")
	golden := filepath.Join("testdata", "cli", "test_motion.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Fatalf("test output differs from %s (run with -update):\n--- got\n%s--- want\n%s", golden, got, want)
	}
}

// TestCLITestTimeline test-runs a held trigger and a wait through the
// scenario's timeline (--at, --event), and a schedule outside its time.
func TestCLITestTimeline(t *testing.T) {
	_, url := startCLIApp(t)
	prog := writeFile(t, "door.json", `{
  "name": "door-left-open",
  "triggers": [{"id": "open", "state": "front_door.contact", "to": false, "for": "5m"}],
  "steps": [
    {"id": "on", "call": "porch_light.set", "args": {"state": "ON"}},
    {"id": "closed", "wait": {"state": "front_door.contact", "to": true}, "timeout": "30m"},
    {"id": "ack", "wait": {"event": "bedroom_remote.action", "value": ["off", "off_double"]}, "timeout": "10m"},
    {"id": "off", "call": "porch_light.set", "args": {"state": "OFF"}}
  ]
}`)
	out, err := cli(t, url, "", "test", prog, "--now", "2026-01-15T22:00:00Z",
		"--at", "2m:front_door.contact=true", "--at", "3m:front_door.contact=false", "--at", "12m:front_door.contact=true", "--event", "15m:bedroom_remote.action=off_double")
	if err != nil || !regexp.MustCompile(`test run \S+: success`).MatchString(out) {
		t.Fatalf("test: %v\n%s", err, out)
	}
	got := regexp.MustCompile(`test run \S+:`).ReplaceAllString(out, "test run <run-id>:")
	golden := filepath.Join("testdata", "cli", "test_timeline.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want, err := os.ReadFile(golden); err != nil || got != string(want) {
		t.Fatalf("test output differs from %s (run with -update):\n--- got\n%s--- want\n%s", golden, got, want)
	}
	out, err = cli(t, url, "", "test", prog, "--now", "2026-01-15T22:00:00Z", "--at", "2m:front_door.contact=true")
	if err == nil || !strings.Contains(out, "not_triggered") || !strings.Contains(out, "changed to true at +2m") {
		t.Errorf("a broken hold: %v\n%s", err, out)
	}
	if _, err := cli(t, url, "", "test", prog, "--at", "2m"); err == nil {
		t.Error("a bad --at accepted")
	}
}

func TestCLIUsageAndAuth(t *testing.T) {
	_, url := startCLIApp(t)
	var out, errb bytes.Buffer
	err := runCLI(context.Background(), "rules", []string{"--server", url, "--token", "wrong"}, &out, &errb, strings.NewReader(""))
	if err == nil || !strings.Contains(err.Error(), "check --token") {
		t.Fatalf("wrong token: %v", err)
	}
	if err := runCLI(context.Background(), "nope", nil, &out, &errb, nil); err == nil {
		t.Fatal("unknown command accepted")
	}
	if _, err := cli(t, url, "", "apply"); err == nil || !strings.HasPrefix(err.Error(), "usage:") {
		t.Fatalf("apply without file: %v", err)
	}
	if _, err := cli(t, url, "", "test", "x.json", "--now", "yesterday"); err == nil {
		t.Fatal("bad --now accepted")
	}
}

// TestExampleRulesValidate keeps examples/rules valid against the demo
// (with its default phone channel).
func TestExampleRulesValidate(t *testing.T) {
	cfg := testConfig(t)
	cfg.Notify = []devices.NotifyChannel{{ID: "notify.phone", Name: "Phone notification", Topic: "pilothouse/notify/phone"}}
	a := startTestApp(t, cfg)
	c := dialT(t, a.URL()+"/mcp")
	testutil.Eventually(t, 10*time.Second, "the demo catalog", func() bool {
		_, err := c.Get(context.Background(), "hall_light.set")
		return err == nil
	})
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "rules", "*.*"))
	if len(files) == 0 {
		t.Fatal("no example rules")
	}
	for _, f := range files {
		prog, err := readProgram(f)
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.Validate(context.Background(), prog)
		if err != nil || !v.Valid {
			t.Errorf("%s: err=%v diagnostics=%+v", f, err, v)
		}
	}
}

// TestPromotedProgramLoop runs an installed rule's promoted program by
// reference: gated on the entry's risk_hints, retried once across drift.
func TestPromotedProgramLoop(t *testing.T) {
	_, url := startCLIApp(t)
	c := dialT(t, url)
	ctx := context.Background()
	yes := true // the terminal's human approved: the server's gate is answered through the approvals API
	onPending := applyApproval(conn{server: url, token: cliToken}, io.Discard, nil, &yes)
	res, err := c.Run(ctx, []byte(lockRule), pilotclient.RunOptions{Approve: func(context.Context, *pilotclient.GateRequest) (bool, error) { return true, nil },
		OnApprovalPending: onPending})
	if err != nil || pilotclient.Verify(res.Execution, false) != nil {
		t.Fatalf("deploy: %v %+v", err, res)
	}
	d, _ := res.Execution.Deploy()

	tr, err := c.RunRef(ctx, d.ProgramRef, pilotclient.RunOptions{TestRun: true})
	if err != nil || tr.Gate != nil || pilotclient.Verify(tr.Execution, true) != nil {
		t.Fatalf("test run by ref: %v gate=%v %+v", err, tr.Gate, tr.Execution)
	}
	if _, err := c.RunRef(ctx, d.ProgramRef, pilotclient.RunOptions{}); !errors.Is(err, pilotclient.ErrNotApproved) {
		t.Fatalf("deploy by ref without approval: %v", err)
	}
	hooks := 0
	asked := 0
	rr, err := c.RunRef(ctx, d.ProgramRef, pilotclient.RunOptions{
		Approve: func(_ context.Context, g *pilotclient.GateRequest) (bool, error) {
			asked++
			return strings.Contains(strings.Join(g.Reasons, ";"), "destructive: true"), nil
		},
		OnApprovalPending: onPending,
		BeforeExecute: func(ctx context.Context, attempt int) error {
			hooks++
			if attempt == 1 {
				prog := strings.Replace(motionLight, "hall-motion-light", "drift-ref", 1)
				_, err := c.Execute(ctx, pilotclient.ExecuteRequest{Program: []byte(prog)})
				return err
			}
			return nil
		},
	})
	if err != nil || rr.Attempts != 2 || hooks != 2 || asked != 1 || pilotclient.Verify(rr.Execution, false) != nil {
		t.Fatalf("deploy by ref across drift: err=%v attempts=%d hooks=%d asked=%d %+v", err, rr.Attempts, hooks, asked, rr.Execution)
	}
	if _, err := c.RunRef(ctx, "automation.nope@000", pilotclient.RunOptions{TestRun: true}); !pilotclient.IsKind(err, "not_found") {
		t.Fatalf("unknown ref: %v", err)
	}
}

// reusableLight is a program with a catalog param: it needs --input.
const reusableLight = `{"name":"any-light","params":{"type":"object","required":["light"],"properties":{
  "light":{"type":"string","catalog":{"kind":"action","type":"light","max_risk":"control"}}}},
  "triggers":[{"id":"dusk","at":"19:00"}],"steps":[{"id":"on","call":"{{ params.light }}","args":{"state":"ON"}}]}`

func TestCLIInputBindsCatalogParams(t *testing.T) {
	_, url := startCLIApp(t)
	file := writeFile(t, "any.json", reusableLight)
	if out, err := cli(t, url, "", "apply", file); err == nil || !strings.Contains(out, "/light") || !strings.Contains(out, `--input '{"light": …}'`) {
		t.Fatalf("apply without input: %v\n%s", err, out)
	}
	out, err := cli(t, url, "", "test", file, "--input", `{"light":"porch_light.set"}`)
	if err != nil || !strings.Contains(out, "porch_light.set") {
		t.Fatalf("test with input: %v\n%s", err, out)
	}
	if out, err := cli(t, url, "", "apply", file, "--input", `{"light":"porch_light.set"}`); err != nil || !strings.Contains(out, "deployed: rule any-light installed") {
		t.Fatalf("apply with input: %v\n%s", err, out)
	}
	if _, err := cli(t, url, "", "apply", file, "--input", `[1]`); err == nil || !strings.Contains(err.Error(), "want a JSON object") {
		t.Fatalf("a bad --input: %v", err)
	}
	// A misspelt param is refused where it is, not left to its default.
	out, err = cli(t, url, "", "apply", file, "--input", `{"light":"porch_light.set","ligth":"hall_light.set"}`)
	if err == nil || !strings.Contains(out, `input_binding at /ligth: params declares no "ligth"`) || !strings.Contains(out, `did you mean "light"?`) ||
		strings.Contains(out, "nearest existing part") {
		t.Fatalf("apply with a misspelt param: %v\n%s", err, out)
	}
	// --input and a timeline together: the bound sensor goes quiet at
	// +10s, the wait is met a minute later and the light goes off.
	motion := writeFile(t, "motion.json", `{"name":"any-motion","params":{"type":"object","required":["sensor","light"],"properties":{
	  "sensor":{"type":"string","catalog":{"kind":"state","type":"binary_sensor"}},
	  "light":{"type":"string","catalog":{"kind":"action","type":"light","max_risk":"control"}}}},
	  "triggers":[{"id":"motion","state":"{{ params.sensor }}","to":true}],
	  "steps":[{"id":"on","call":"{{ params.light }}","args":{"state":"ON"}},
	    {"id":"quiet","wait":{"state":"{{ params.sensor }}","to":false,"for":"1m"},"timeout":"10m"},
	    {"id":"off","call":"{{ params.light }}","args":{"state":"OFF"}}]}`)
	out, err = cli(t, url, "", "test", motion, "--input", `{"sensor":"hall_motion.occupancy","light":"porch_light.set"}`,
		"--at", "10s:hall_motion.occupancy=false")
	if err != nil || !strings.Contains(out, ": success") || !strings.Contains(out, `"waited_ms":70000`) || !strings.Contains(out, `porch_light.set {"state":"OFF"} (step off)`) {
		t.Fatalf("test with input and a timeline: %v\n%s", err, out)
	}
}

// TestCLITestShowsWarnings: a test run of a call to a misspelt area
// succeeds calling nothing, and says why.
func TestCLITestShowsWarnings(t *testing.T) {
	_, url := startCLIApp(t)
	file := writeFile(t, "area.json", `{"name":"hall-area","triggers":[{"id":"m","state":"hall_motion.occupancy","to":true}],
	  "steps":[{"id":"on","call":{"area":"hal","type":"light","action":"set"},"args":{"state":"ON"}}]}`)
	out, err := cli(t, url, "", "test", file, "--trigger", "m", "--value", "true")
	if err != nil || !strings.Contains(out, "warning no_match at /steps/0/call") {
		t.Fatalf("test of a misspelt area: %v\n%s", err, out)
	}
}

// TestCLITestFromAndTheValueItReads: a numeric trigger fires on a crossing
// given by --from, and the body reads the trigger's value as the state even
// when --state gave the entity another (its value before).
func TestCLITestFromAndTheValueItReads(t *testing.T) {
	_, url := startCLIApp(t)
	file := writeFile(t, "fan.json", `{"name":"fan","triggers":[{"id":"wet","state":"outdoor_weather.humidity","above":65}],
	  "steps":[{"id":"check","if":"state('outdoor_weather.humidity') == 75","then":[{"id":"on","call":"hall_light.set","args":{"state":"ON"}}]}]}`)
	for _, args := range [][]string{{"--value", "75", "--from", "60"}, {"--value", "75", "--state", "outdoor_weather.humidity=60"}} {
		out, err := cli(t, url, "", "test", append([]string{file}, args...)...)
		if err != nil || !strings.Contains(out, ": success") || !strings.Contains(out, `hall_light.set {"state":"ON"}`) {
			t.Fatalf("test %v: %v\n%s", args, err, out)
		}
	}
	out, err := cli(t, url, "", "test", file, "--value", "75", "--from", "70")
	if err == nil || !strings.Contains(out, "give the value it had before as the scenario's from (pilothouse test --from)") {
		t.Fatalf("test from inside the range: %v\n%s", err, out)
	}
}

// TestCLIApplyReplacesOnlyWhenAsked: applying a changed program under an
// installed rule's name installs nothing and says what it would replace;
// --replace replaces it.
func TestCLIApplyReplacesOnlyWhenAsked(t *testing.T) {
	_, url := startCLIApp(t)
	c := dialT(t, url)
	rule := `{"name":"porch-on","triggers":[{"id":"m","state":"hall_motion.occupancy","to":true}],"steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}}]}`
	if _, err := cli(t, url, "", "apply", writeFile(t, "a.json", rule)); err != nil {
		t.Fatal(err)
	}
	changed := writeFile(t, "b.json", strings.Replace(rule, `"ON"`, `"OFF"`, 1))
	out, err := cli(t, url, "", "apply", changed)
	if err == nil || !strings.Contains(out+err.Error(), "rule_exists") {
		t.Fatalf("a changed program without --replace: %v\n%s", err, out)
	}
	// The command line says its own way: --replace, not the MCP input.
	if said := out + err.Error(); !strings.Contains(err.Error(), "run the same pilothouse apply with --replace") ||
		!strings.Contains(out, "hint: pilothouse apply replaces it only with --replace") || strings.Contains(said, "input.install") {
		t.Errorf("rule_exists does not say --replace:\n%s\n%v", out, err)
	}
	if _, err := cli(t, url, "", "apply", changed, "--replace"); err != nil {
		t.Fatalf("--replace: %v", err)
	}
	list, err := c.Rules(context.Background())
	if err != nil || len(list) != 1 {
		t.Fatalf("rules %v %v", list, err)
	}
}
