package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
)

// guideProgram is one ```json program of a served guide with the test run
// its section declares: `Test run: "input": {...} → status`.
type guideProgram struct {
	where  string // guide/section
	src    string
	input  map[string]any // nil: the section declares no test run
	expect string
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
var expectMark = regexp.MustCompile("^`? → `([a-z_]+)`")

// programsOf extracts the ```json programs of a guide body, each with the
// test run its "## " section declares.
func programsOf(t *testing.T, guide, body string) []guideProgram {
	t.Helper()
	var out []guideProgram
	for _, sec := range strings.Split(body, "\n## ") {
		head, _, _ := strings.Cut(sec, "\n")
		parts := strings.Split(sec, "```json\n")
		for _, p := range parts[1:] {
			src, _, ok := strings.Cut(p, "```")
			if !ok {
				t.Fatalf("%s/%s: unterminated program", guide, head)
			}
			out = append(out, guideProgram{where: guide + "/" + head, src: src})
		}
		if len(parts) > 2 {
			t.Fatalf("%s/%s: %d programs in one section (one test run each)", guide, head, len(parts)-1)
		}
		loc := testRunLine.FindStringIndex(sec)
		if loc == nil || len(parts) < 2 {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(sec[loc[1]:]))
		var in map[string]any
		if err := dec.Decode(&in); err != nil {
			t.Fatalf("%s/%s: the test run's input is not JSON: %v", guide, head, err)
		}
		m := expectMark.FindStringSubmatch(sec[loc[1]+int(dec.InputOffset()):])
		if m == nil {
			t.Fatalf("%s/%s: the test run declares no expected status (→ `status`)", guide, head)
		}
		out[len(out)-1].input, out[len(out)-1].expect = in, m[1]
	}
	return out
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
	_, c := sunStack(t)
	ids, bodies := servedGuides(t, c)
	// Friday 05:59:30: inside the cookbook night light's window; the
	// motion recurs after 06:00.
	const start = "2026-01-16T05:59:30+01:00"
	const recur = "2026-01-16T06:00:20+01:00"
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
