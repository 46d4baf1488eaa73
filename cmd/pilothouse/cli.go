package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/cmd/pilothouse/internal/rulefile"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/pilotclient"
	"github.com/pilothouse/pilothouse/rules"
)

// defaultServer is where the client commands look for Pilothouse.
const defaultServer = "http://127.0.0.1:8080/mcp"

// cliHooks is a test seam: tests set beforeExecute to force catalog drift
// between validate and execute.
var cliHooks struct {
	beforeExecute func(ctx context.Context, attempt int) error
}

// runCLI runs a client command (apply, test, rules, trace) against a
// running server over MCP. It is a Pilotage Client (spec §7): the risk gate
// is enforced here, by the Host, not by any Model.
func runCLI(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer, stdin io.Reader) error {
	switch cmd {
	case "apply":
		return cliApply(ctx, args, stdout, stderr, stdin)
	case "test":
		return cliTest(ctx, args, stdout, stderr)
	case "rules":
		return cliRules(ctx, args, stdout, stderr)
	case "trace":
		return cliTrace(ctx, args, stdout, stderr)
	case "sim":
		return cliSim(ctx, args, stdout, stderr)
	case "runs":
		return cliRuns(ctx, args, stdout, stderr)
	case "lookup":
		return cliLookup(ctx, args, stdout, stderr)
	case "approvals":
		return cliApprovals(ctx, args, stdout, stderr)
	case "approve", "decline":
		return cliDecide(ctx, cmd, args, stdout, stderr)
	default:
		return fmt.Errorf("unknown client command %q (apply, test, rules, runs, trace, lookup, sim, approvals, approve, decline)", cmd)
	}
}

// parseInterspersed parses flags that may come before or after the
// positional arguments ("apply rule.json --approve").
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseFlagSet(fs, args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// readProgram reads a rule file: JSON, or YAML (.yaml, .yml) turned into
// the same JSON.
func readProgram(path string) (json.RawMessage, error) { return rulefile.Program(path) }

// applyOpts are pilothouse apply's flags.
type applyOpts struct {
	cn                    conn
	approve, yes, replace bool
	input                 string
}

func (o *applyOpts) register(fs *flag.FlagSet) {
	o.cn.register(fs)
	fs.BoolVar(&o.approve, "approve", false, "say yes without asking to a plan that locks, opens, closes or notifies (destructive/openWorld)")
	fs.BoolVar(&o.yes, "yes", false, "same as --approve")
	fs.BoolVar(&o.replace, "replace", false, "replace the installed rule of the program's name (an edit); without it a changed program is refused with what it would replace")
	fs.StringVar(&o.input, "input", "", inputUsage)
}

func cliApply(ctx context.Context, args []string, stdout, stderr io.Writer, stdin io.Reader) error {
	fs := newFlagSet("apply", stderr)
	var o applyOpts
	o.register(fs)
	cn, approve, yes, inputJSON := &o.cn, &o.approve, &o.yes, &o.input
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("usage: pilothouse apply rule.json [--input JSON] [--approve] [--replace] [--server URL] [--token T]")
	}
	prog, input, err := readProgramInput(pos[0], *inputJSON)
	if err != nil {
		return err
	}
	if o.replace {
		if input == nil {
			input = map[string]any{}
		}
		input["install"] = map[string]any{"replace": true}
	}
	c, err := cn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	in := bufio.NewReader(stdin)
	humanSaidYes := false
	res, err := c.Run(ctx, prog, pilotclient.RunOptions{Input: input,
		OnApprovalPending: applyApproval(*cn, stdout, in, &humanSaidYes),
		OnValidate: func(v *pilotclient.ValidateResult, attempt int) {
			if attempt > 1 {
				fmt.Fprintln(stdout, "re-validated against the current catalog:")
			}
			printValidation(stdout, prog, v)
		},
		OnDrift: func(r *pilotclient.ExecuteResult, ids []string) {
			fmt.Fprintf(stdout, "catalog drift: the catalog changed since validation (%s); looked up %s again, re-validating and retrying once\n",
				r.Outcome.Error, orNone(strings.Join(ids, ", ")))
		},
		Approve:       terminalApprover(stdout, in, *approve || *yes, &humanSaidYes),
		BeforeExecute: cliHooks.beforeExecute,
	})
	if err != nil {
		return err
	}
	if n := len(res.Validation.Errors()); n > 0 || !res.Validation.Valid {
		return fmt.Errorf("%s is invalid (%s): nothing was deployed", pos[0], rules.Plural(n, "error", ""))
	}
	return reportDeploy(stdout, prog, res, cn.houseZone(ctx))
}

// terminalApprover is apply's Host risk gate: the plan is shown and the
// person at the terminal answers (or --approve did); said records a yes.
func terminalApprover(stdout io.Writer, in *bufio.Reader, byPolicy bool, said *bool) pilotclient.Approver {
	return func(ctx context.Context, g *pilotclient.GateRequest) (bool, error) {
		printGate(stdout, g)
		if byPolicy {
			fmt.Fprintln(stdout, "approved by policy (--approve)")
			*said = true
			return true, nil
		}
		fmt.Fprint(stdout, "Deploy this rule? [y/N] ")
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			fmt.Fprintln(stdout)
			return false, nil
		}
		ans := strings.ToLower(strings.TrimSpace(line))
		*said = ans == "y" || ans == "yes"
		return *said, nil
	}
}

const inputUsage = `the program's params as a JSON object, e.g. '{"light":"hall_light.set","hold":"3m"}'`

// readProgramInput reads the program file and --input, a JSON object
// of the program's params ("" = none).
func readProgramInput(path, input string) (json.RawMessage, map[string]any, error) {
	prog, err := readProgram(path)
	if err != nil {
		return nil, nil, err
	}
	in := map[string]any{}
	if strings.TrimSpace(input) == "" {
		return prog, in, nil
	}
	if err := json.Unmarshal([]byte(input), &in); err != nil || in == nil {
		return nil, nil, fmt.Errorf("--input %q: want a JSON object of the program's params, e.g. '{\"light\":\"hall_light.set\"}'", input)
	}
	return prog, in, nil
}

// reportDeploy says what a deploy did, its times in the house's zone loc.
func reportDeploy(stdout io.Writer, prog json.RawMessage, res *pilotclient.RunResult, loc *time.Location) error {
	r := res.Execution
	if r.Outcome.Status == pilotclient.StatusCatalogDrift {
		return fmt.Errorf("the catalog drifted again after one retry (run %s): nothing was deployed; try again", r.RunID)
	}
	if r.Outcome.Status == "validation_error" {
		printDiagnostics(stdout, prog, r.Diagnostics)
	}
	if r.Outcome.Status == rules.StatusRuleExists && r.Replaces != nil {
		return ruleExists(r)
	}
	if err := pilotclient.Verify(r, false); err != nil {
		return err
	}
	d, _ := r.Deploy()
	verb := "installed"
	switch {
	case d.Unchanged:
		verb = "unchanged (nothing replaced or cancelled): already installed"
	case d.Replaced:
		verb = "replaced"
	}
	fmt.Fprintf(stdout, "deployed: rule %s %s as %s (run %s)\n", d.Rule, verb, d.ProgramRef, r.RunID)
	for _, t := range d.Triggers {
		fmt.Fprintf(stdout, "  trigger %s: %s%s\n", t.ID, t.Kind, triggerDetail(t, loc))
	}
	if d.NextFire != nil {
		fmt.Fprintf(stdout, "  next fire: %s\n", houseTime(*d.NextFire, loc))
	} else {
		fmt.Fprintln(stdout, "  next fire: on the next matching event")
	}
	return nil
}

func triggerDetail(t pilotage.TriggerInfo, loc *time.Location) string {
	s := ""
	if t.Entity != "" {
		s += " " + t.Entity
	}
	if t.Spec != "" {
		s += " " + t.Spec
	}
	switch {
	case t.NextFire != nil && t.Held:
		s += " (next " + houseTime(*t.NextFire, loc) + " if the state holds until then)"
	case t.NextFire != nil:
		s += " (next " + houseTime(*t.NextFire, loc) + ")"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// scenarioFlags are pilothouse test's flags: the test run's scenario.
type scenarioFlags struct {
	trigger, value, from, now string
	state                     stateFlags
	timeline                  []any
}

func (sf *scenarioFlags) register(fs *flag.FlagSet) {
	sf.state = stateFlags{}
	fs.StringVar(&sf.trigger, "trigger", "", "trigger id that fires (default: the first trigger)")
	fs.StringVar(&sf.value, "value", "", "the trigger's value (JSON, or a plain string)")
	fs.StringVar(&sf.from, "from", "", "the value the trigger's entity had before (JSON, or a plain string): a numeric trigger fires only when the value crosses into its range")
	fs.Var(sf.state, "state", "state id=value before the run (repeatable)")
	fs.StringVar(&sf.now, "now", "", "simulated time, RFC 3339")
	fs.Var(timelineFlag{"state", &sf.timeline}, "at", "a state change on the virtual clock: offset:id=value, e.g. 90s:hall_motion.occupancy=false (repeatable; a negative offset is before the start)")
	fs.Var(timelineFlag{"event", &sf.timeline}, "event", "an event on the virtual clock: offset:id=payload, e.g. 2m:bedroom_remote.action=off (repeatable)")
}

// scenario is the scenario the flags describe.
func (sf *scenarioFlags) scenario() (map[string]any, error) {
	scenario := map[string]any{}
	if sf.trigger != "" {
		scenario["trigger"] = sf.trigger
	}
	if sf.value != "" {
		scenario["value"] = jsonOrString(sf.value)
	}
	if sf.from != "" {
		scenario["from"] = jsonOrString(sf.from)
	}
	if len(sf.state) > 0 {
		scenario["state"] = map[string]any(sf.state)
	}
	if len(sf.timeline) > 0 {
		scenario["timeline"] = sf.timeline
	}
	if sf.now != "" {
		if _, err := time.Parse(time.RFC3339, sf.now); err != nil {
			return nil, fmt.Errorf("--now %q: want RFC 3339, e.g. 2026-01-15T23:30:00Z", sf.now)
		}
		scenario["now"] = sf.now
	}
	return scenario, nil
}

// timelineFlag adds timeline entries of one kind ("state" or "event").
type timelineFlag struct {
	kind string
	list *[]any
}

func (f timelineFlag) String() string { return "" }
func (f timelineFlag) Set(v string) error {
	at, rest, ok := strings.Cut(v, ":")
	id, val, ok2 := strings.Cut(rest, "=")
	if !ok || !ok2 || at == "" || id == "" {
		return fmt.Errorf("want offset:id=value (e.g. 90s:hall_motion.occupancy=false), got %q", v)
	}
	*f.list = append(*f.list, map[string]any{"at": at, f.kind: map[string]any{id: jsonOrString(val)}})
	return nil
}

// stateFlags collects repeated --state id=value.
type stateFlags map[string]any

func (s stateFlags) String() string { return "" }
func (s stateFlags) Set(v string) error {
	id, val, ok := strings.Cut(v, "=")
	if !ok || id == "" {
		return fmt.Errorf("want id=value, got %q", v)
	}
	s[id] = jsonOrString(val)
	return nil
}

// jsonOrString parses v as JSON when it parses (true, 42, {"a":1}), else
// keeps it as a string (ON).
func jsonOrString(v string) any {
	var out any
	if err := json.Unmarshal([]byte(v), &out); err == nil {
		return out
	}
	return v
}

// testOpts are pilothouse test's flags.
type testOpts struct {
	cn    conn
	sf    scenarioFlags
	input string
}

func (o *testOpts) register(fs *flag.FlagSet) {
	o.cn.register(fs)
	o.sf.register(fs)
	fs.StringVar(&o.input, "input", "", inputUsage)
}

func cliTest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("test", stderr)
	var o testOpts
	o.register(fs)
	cn, sf, inputJSON := &o.cn, &o.sf, &o.input
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("usage: pilothouse test rule.json [--input JSON] [--trigger ID --value V --from V --state id=value ... --now RFC3339 --at 90s:id=value ... --event 2m:id=payload ...]")
	}
	prog, input, err := readProgramInput(pos[0], *inputJSON)
	if err != nil {
		return err
	}
	if input["scenario"], err = sf.scenario(); err != nil {
		return err
	}
	c, err := cn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	var plan *pilotclient.Plan
	res, err := c.Run(ctx, prog, pilotclient.RunOptions{TestRun: true, Input: input,
		OnValidate: func(v *pilotclient.ValidateResult, attempt int) {
			plan = v.Plan
			if !v.Valid || len(v.Errors()) > 0 {
				printValidation(stdout, prog, v)
			} else { // warnings too: a misspelt area matches nothing, and the run still succeeds
				printDiagnostics(stdout, prog, v.Diagnostics)
			}
		},
		BeforeExecute: cliHooks.beforeExecute,
	})
	if err != nil {
		return err
	}
	if !res.Validation.Valid || len(res.Validation.Errors()) > 0 {
		return fmt.Errorf("%s is invalid: nothing was run", pos[0])
	}
	r := res.Execution
	fmt.Fprintf(stdout, "test run %s: %s", r.RunID, r.Outcome.Status)
	if r.Outcome.Error != "" {
		fmt.Fprintf(stdout, " (%s)", r.Outcome.Error)
	}
	fmt.Fprintln(stdout)
	printDiagnostics(stdout, prog, r.Diagnostics)
	if r.Trace != nil {
		printTrace(stdout, plan, r.Trace)
	}
	printTestOutput(stdout, r.Output)
	switch r.Outcome.Status {
	case "not_triggered", "assumed":
		// ok, but the scenario did not show the rule working.
		return fmt.Errorf("test run %s ended %s, not success: the trace above says why; a scenario's --value/--from, --state, a timeline (--at) or --now set what it runs on", r.RunID, r.Outcome.Status)
	}
	return pilotclient.Verify(r, true)
}

func cliRules(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("rules", stderr)
	var cn conn
	cn.register(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	c, err := cn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if len(pos) == 0 {
		list, err := c.Rules(ctx)
		if err != nil {
			return err
		}
		printRules(stdout, list, cn.houseZone(ctx), offlineTriggers(ctx, c, list))
		return nil
	}
	if len(pos) != 2 {
		c, _ := lookupCommand("rules")
		return fmt.Errorf("usage: pilothouse rules %s\n%s", c.args, c.help)
	}
	switch verb, name := pos[0], pos[1]; verb {
	case "enable", "disable":
		r, err := c.SetRuleEnabled(ctx, name, verb == "enable")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "rule %s: %s\n", r.Name, r.Status)
	case "remove":
		if err := c.RemoveRule(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "rule %s: removed\n", name)
	default:
		return fmt.Errorf("unknown rules verb %q (enable, disable, remove)", verb)
	}
	return nil
}

// traceOpts are pilothouse trace's flags.
type traceOpts struct {
	cn    conn
	level string
}

func (o *traceOpts) register(fs *flag.FlagSet) {
	o.cn.register(fs)
	fs.StringVar(&o.level, "level", pilotage.LevelFull, "summary or full")
}

func cliTrace(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("trace", stderr)
	var o traceOpts
	o.register(fs)
	cn := &o.cn
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New("usage: pilothouse trace RUN_ID [--level summary|full]")
	}
	c, err := cn.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	t, err := c.Trace(ctx, pos[0], o.level)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "run %s: %s", t.RunID, t.Outcome.Status)
	if t.Outcome.Error != "" {
		fmt.Fprintf(stdout, " (%s)", t.Outcome.Error)
	}
	fmt.Fprintln(stdout)
	if t.Trace != nil {
		printTrace(stdout, nil, t.Trace)
	}
	if len(t.Output) > 0 && string(t.Output) != "null" {
		fmt.Fprintf(stdout, "output: %s\n", compact(t.Output))
	}
	if t.Narration != "" {
		fmt.Fprintf(stdout, "narration (server's interpretation, unverified):\n%s\n", t.Narration)
	}
	return nil
}

func healthFlags(fs *flag.FlagSet) *string {
	def := os.Getenv("PILOTHOUSE_HEALTHCHECK_URL")
	if def == "" {
		def = "http://127.0.0.1:8080/healthz"
	}
	return fs.String("url", def, "health endpoint (env PILOTHOUSE_HEALTHCHECK_URL)")
}

// runHealthcheck GETs /healthz of the local server and fails unless it
// answers 200; the container image's HEALTHCHECK runs it (no shell there).
func runHealthcheck(ctx context.Context, args []string) error {
	fs := newFlagSet("healthcheck", os.Stderr)
	url := healthFlags(fs)
	if err := parseFlagSet(fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}
