package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/storage"
)

// guideProgram is one ```json program of a served guide with the test
// runs its "## " section declares: Test run: `"input": {...}` → `status`
// (optionally `"input": {...}, "store": false`).
type guideProgram struct {
	where string // guide/section
	src   string
	runs  []guideRun
}

type guideRun struct {
	input  map[string]any
	store  *bool
	expect string
}

// demoHouse is the demo house as `pilothouse serve --demo` runs it in its
// container: its example location, UTC (the zone the cookbook's scenario
// times are written in), and the notify.phone channel. Its policy needs
// no approval: the guides' programs are checked here, the risk gate in
// approval_test.go.
func demoHouse(t *testing.T) *client.Client {
	t.Helper()
	loc := engine.DemoLocation
	s := newHTTPStackDevs(t, engine.Config{TimeZone: time.UTC, Location: &loc, LocationSource: engine.LocationDemo, Approval: noApproval}, storage.Options{},
		devices.Options{Logger: quiet(), Notify: []devices.NotifyChannel{{ID: "notify.phone", Name: "Phone notification", Topic: "pilothouse/notify/phone"}}})
	c := s.client("")
	createGuideHelpers(t, c)
	return c
}

// createGuideHelpers makes the helpers the guides' recipes declare
// (```helpers blocks: one pilothouse_helpers definition a line) with the
// tool, as a reader of the guide would.
func createGuideHelpers(t *testing.T, c *client.Client) {
	t.Helper()
	_, bodies := servedGuides(t, c)
	for id, body := range bodies {
		for _, part := range strings.Split(body, "```helpers\n")[1:] {
			block, _, _ := strings.Cut(part, "```")
			for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
				var def map[string]any
				if err := json.Unmarshal([]byte(line), &def); err != nil {
					t.Fatalf("%s: helper %q: %v", id, line, err)
				}
				if out, isErr := callTool(t, c, "pilothouse_helpers", map[string]any{"verb": "create", "helper": def}); isErr {
					t.Fatalf("%s: create helper %s: %v", id, line, out)
				}
			}
		}
	}
}

// servedGuides reads every guide as pilotage_learn serves it, in index
// order: id → body.
func servedGuides(t *testing.T, c *client.Client) ([]string, map[string]string) {
	t.Helper()
	idx := call(t, c, "pilotage_learn", map[string]any{})
	var ids []string
	bodies := map[string]string{}
	for _, g := range idx["guides"].([]any) {
		id := g.(map[string]any)["id"].(string)
		got := call(t, c, "pilotage_learn", map[string]any{"id": id})
		ids = append(ids, id)
		bodies[id] = got["body"].(string)
	}
	return ids, bodies
}

var testRunLine = regexp.MustCompile("Test run: `\"input\": ")
var storeMark = regexp.MustCompile(`^, "store": (true|false)`)
var expectMark = regexp.MustCompile("^`? → `([a-z_]+)`")

// programsOf extracts the ```json programs of a guide body, each with the
// test runs its "## " section declares.
func programsOf(t *testing.T, guide, body string) []guideProgram {
	t.Helper()
	var out []guideProgram
	for _, sec := range strings.Split(body, "\n## ") {
		head, _, _ := strings.Cut(sec, "\n")
		parts := strings.Split(sec, "```json\n")
		if len(parts) > 2 {
			t.Fatalf("%s/%s: %d programs in one section (its test runs would be ambiguous)", guide, head, len(parts)-1)
		}
		if len(parts) < 2 {
			continue
		}
		src, _, ok := strings.Cut(parts[1], "```")
		if !ok {
			t.Fatalf("%s/%s: unterminated program", guide, head)
		}
		gp := guideProgram{where: guide + "/" + head, src: src}
		for _, loc := range testRunLine.FindAllStringIndex(sec, -1) {
			gp.runs = append(gp.runs, parseRun(t, gp.where, sec[loc[1]:]))
		}
		out = append(out, gp)
	}
	return out
}

// parseRun reads `{input}` [, "store": b]` → `status` at the start of text.
func parseRun(t *testing.T, where, text string) guideRun {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	var r guideRun
	if err := dec.Decode(&r.input); err != nil {
		t.Fatalf("%s: a test run's input is not JSON: %v", where, err)
	}
	rest := text[dec.InputOffset():]
	if m := storeMark.FindStringSubmatch(rest); m != nil {
		b := m[1] == "true"
		r.store, rest = &b, rest[len(m[0]):]
	}
	m := expectMark.FindStringSubmatch(rest)
	if m == nil {
		t.Fatalf("%s: a test run declares no expected status (→ `status`): %.60s", where, rest)
	}
	r.expect = m[1]
	return r
}

// runOutput test-runs src with input and returns the whole result.
func runOutput(t *testing.T, c *client.Client, src string, input map[string]any) map[string]any {
	t.Helper()
	if input == nil {
		input = map[string]any{}
	}
	return call(t, c, "pilotage_execute", map[string]any{"test_run": true, "program": prog(t, src), "input": input})
}

// callsOf lists a test run's calls as "id args".
func callsOf(out map[string]any) []string {
	var calls []string
	if o, ok := out["output"].(map[string]any); ok {
		for _, cl := range o["calls"].([]any) {
			cl := cl.(map[string]any)
			args, _ := json.Marshal(cl["args"])
			calls = append(calls, fmt.Sprintf("%s %s", cl["id"], args))
		}
	}
	return calls
}

// TestGuideMotionLightsTurnOff: every motion light of the guides (the
// core guide's complete example and the cookbook's) turns the light off
// when motion recurs in the hall it lit. In a mode other than single a
// recurrence starts a new run (restart cancels the first one with its
// pending off), so that second run, in the lit hall, must turn it off
// itself; the old core example stopped at its darkness condition there
// and left the light on.
func TestGuideMotionLightsTurnOff(t *testing.T) {
	c := demoHouse(t)
	ids, bodies := servedGuides(t, c)
	// Friday 05:59:30: inside the cookbook night light's window; the
	// motion recurs after 06:00.
	const start = "2026-01-16T05:59:30Z"
	const recur = "2026-01-16T06:00:20Z"
	n := 0
	for _, id := range ids {
		for _, gp := range programsOf(t, id, bodies[id]) {
			p := prog(t, gp.src)
			trig := p["triggers"].([]any)[0].(map[string]any)
			if trig["state"] != "hall_motion.occupancy" || trig["to"] != true || !strings.Contains(gp.src, `"state": "OFF"`) {
				continue
			}
			n++
			first := runOutput(t, c, gp.src, map[string]any{"scenario": map[string]any{
				"now": start, "state": map[string]any{"hall_motion.illuminance": 5, "hall_light.state": "OFF"},
				"timeline": []any{
					map[string]any{"at": "30s", "state": map[string]any{"hall_motion.occupancy": false}},
					map[string]any{"at": "50s", "state": map[string]any{"hall_motion.occupancy": true, "hall_motion.illuminance": 200}},
					map[string]any{"at": "80s", "state": map[string]any{"hall_motion.occupancy": false}},
				}}})
			calls := callsOf(first)
			if status(first) != "success" || len(calls) == 0 || !strings.Contains(calls[len(calls)-1], `"state":"OFF"`) {
				t.Errorf("%s: the first run does not end with the light off: %v %v", gp.where, first["outcome"], calls)
			}
			if mode, _ := p["mode"].(string); mode == "" || mode == "single" {
				continue // the recurrence is skipped: the first run turns the light off
			}
			second := runOutput(t, c, gp.src, map[string]any{"scenario": map[string]any{
				"now": recur, "state": map[string]any{"hall_motion.illuminance": 200, "hall_light.state": "ON"},
				"timeline": []any{map[string]any{"at": "30s", "state": map[string]any{"hall_motion.occupancy": false}}}}})
			calls = callsOf(second)
			if status(second) != "success" || len(calls) == 0 || !strings.Contains(calls[len(calls)-1], `"state":"OFF"`) {
				t.Errorf("%s: motion again in the lit hall (%s) restarts the run, and the new run leaves the light on: %v %v",
					gp.where, p["mode"], second["outcome"], calls)
			}
		}
	}
	if n < 3 {
		t.Fatalf("%d motion lights in the guides, want the core example and the cookbook's two", n)
	}
}

// TestEveryGuideProgramThroughMCP walks every ```json program of every
// guide as pilotage_learn serves it, against the demo house: each
// validates with no error diagnostic, test-runs with the input its
// section declares ("Test run: ... → status") to that status, and
// deploys (so a later recipe may call an earlier one's automation).
func TestEveryGuideProgramThroughMCP(t *testing.T) {
	c := demoHouse(t)
	ids, bodies := servedGuides(t, c)
	n, recipes := 0, 0
	for _, id := range ids {
		for _, gp := range programsOf(t, id, bodies[id]) {
			n++
			if id == "cookbook" {
				recipes++
			}
			if len(gp.runs) == 0 {
				t.Errorf("%s: declares no test run", gp.where)
				continue
			}
			val := call(t, c, "pilotage_validate", map[string]any{"program": prog(t, gp.src)})
			if ds, _ := val["diagnostics"].([]any); val["valid"] != true || hasError(ds) {
				t.Errorf("%s: does not validate against the demo house: %v", gp.where, ds)
				continue
			}
			var deployInput map[string]any
			for i, r := range gp.runs {
				args := map[string]any{"test_run": true, "program": prog(t, gp.src), "input": r.input}
				if r.store != nil {
					args["store"] = *r.store
				}
				out := call(t, c, "pilotage_execute", args)
				if st := status(out); st != r.expect {
					t.Errorf("%s: test run %d ended %s, the guide says %s: %v %v", gp.where, i+1, st, r.expect, out["outcome"], out["diagnostics"])
				}
				checkStored(t, c, gp.where, out, r.store == nil || *r.store)
				if deployInput == nil && r.expect == "success" {
					deployInput = withoutScenario(r.input)
				}
			}
			// Guide programs share names (variants of one rule): each
			// replaces the one before, as a user trying them would ask.
			if deployInput == nil {
				deployInput = map[string]any{}
			}
			deployInput["install"] = map[string]any{"replace": true}
			dep := call(t, c, "pilotage_execute", map[string]any{"program": prog(t, gp.src), "input": deployInput})
			if oc := dep["outcome"].(map[string]any); oc["ok"] != true {
				t.Errorf("%s: deploy: %v %v", gp.where, oc, dep["diagnostics"])
			}
		}
	}
	checkCoverage(t, bodies["cookbook"])
	if len(bodies["core"]) > 8192 {
		t.Errorf("the core guide as served is %d bytes, over 8 KiB", len(bodies["core"]))
	}
	if recipes < 20 || n < recipes+1 {
		t.Errorf("%d programs in the guides, %d in the cookbook: want ≥ 20 recipes and the core example", n, recipes)
	}
}

func hasError(ds []any) bool {
	for _, d := range ds {
		if d.(map[string]any)["severity"] == "error" {
			return true
		}
	}
	return false
}

func withoutScenario(in map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range in {
		if k != "scenario" {
			out[k] = v
		}
	}
	return out
}

// checkStored: a test run's record is fetchable with pilotage_trace
// exactly when it was stored.
func checkStored(t *testing.T, c *client.Client, where string, out map[string]any, stored bool) {
	t.Helper()
	runID, _ := out["run_id"].(string)
	if runID == "" || status(out) == "validation_error" {
		return // refused before it ran: nothing to keep
	}
	tr, isErr := callTool(t, c, "pilotage_trace", map[string]any{"run_id": runID})
	if isErr == stored {
		t.Errorf("%s: store %v, but pilotage_trace of %s: %v", where, stored, runID, tr)
	}
}

// checkCoverage: the cookbook's programs and test runs use every construct
// the guides teach at least once.
func checkCoverage(t *testing.T, cookbook string) {
	t.Helper()
	var progs strings.Builder
	for _, gp := range programsOf(t, "cookbook", cookbook) {
		progs.WriteString(gp.src)
	}
	all := progs.String()
	for _, want := range []string{
		`"state": "`, `"event": "`, `"cron": "`, `"at": "`, `"sun": "sunset"`, `"sun": "sunrise"`, `"for": "`, `"above": `,
		`"value": ["`, `"expr": "state(`, `"time": { "after": "22:00", "before": "06:00" }`, `"weekday": [`, `"after_offset": "`,
		`"throttle": "`, `since('`, `last_changed('`, `"wait": {`, `"delay": "`, `"choose": [`, `"repeat": { "count"`,
		`"repeat": { "for_each"`, `"repeat": { "until"`, `"set": {`, `"if": "`, `"mode": "restart"`, `"mode": "queued"`,
		`"mode": "parallel"`, `"mode": "single"`, `"catalog": { "kind": "action"`, `"catalog": { "kind": "state"`,
		`"catalog": { "kind": "automation"`, `"continue_on_timeout": true`, `"above": "{{ params.`, `"below": "{{ params.`,
		`"for": "{{ params.`,
	} {
		if !strings.Contains(all, want) {
			t.Errorf("no cookbook program uses %s", want)
		}
	}
	for _, want := range []string{`"store": false`, `"last_run": "`, `"timeline": [`, "→ `throttled`", "→ `not_triggered`", "→ `conditions_not_met`", "→ `validation_error`"} {
		if !strings.Contains(cookbook, want) {
			t.Errorf("no cookbook test run shows %s", want)
		}
	}
}
