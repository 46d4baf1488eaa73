package web

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/storage"
)

// chooseRule has a condition that reads a state and a choose whose arm
// reads the trigger: its trace shows values read and a nested step.
const chooseRule = `{
  "name": "hall-choose",
  "triggers": [{"id": "motion", "state": "hall_motion.occupancy", "to": true}],
  "conditions": [{"id": "dark", "expr": "state('hall_motion.illuminance') < 50"}],
  "steps": [{"id": "pick", "choose": [
    {"label": "seen", "when": "trigger.to == true", "do": [{"id": "on", "call": "hall_light.set", "args": {"state": "ON"}}]}
  ]}]
}`

var stepTimeRE = regexp.MustCompile(`<time title="[^"]+">\d\d:\d\d:\d\d\.\d\d\d</time> · took <span class="took">[0-9.]+ (ms|s)</span>`)

// TestRunPageFollowsTrace: a firing's page names it a firing with its
// trigger, gives each step its start time and duration, lists what the
// condition and the choose read, indents the arm's step under the choose,
// and links the rule's previous and next runs (the first is the deploy
// that installed it); a test run says so.
func TestRunPageFollowsTrace(t *testing.T) {
	f := newFixture(t, nil)
	deployed := f.deploy(nil, chooseRule).RunID
	c := f.client()
	var runs []storage.Run
	for i := 1; i <= 2; i++ {
		f.motion(true)
		testutil.Eventually(t, 10*time.Second, "a firing", func() bool { runs = f.firings("hall-choose"); return len(runs) >= i })
		f.motion(false)
	}
	newer, older := runs[0].ID, runs[1].ID

	code, body, _ := c.get("/runs/" + newer)
	if code != 200 {
		t.Fatalf("run page: %d", code)
	}
	mustContain(t, "firing page", body,
		`Firing of <a href="/rules/hall-choose">hall-choose</a>`, `<dt>Trigger</dt><dd><span class="mono">motion</span>: hall_motion.occupancy changed from false to true`,
		`<dt class="mono">state(&#39;hall_motion.illuminance&#39;)</dt><dd class="mono">12</dd>`,
		`<dt class="mono">trigger.to</dt><dd class="mono">true</dd>`,
		`rel="prev" href="/runs/`+older+`"`, "No later run")
	if n := len(stepTimeRE.FindAllString(body, -1)); n < 5 {
		t.Errorf("%d steps show a start time and duration, want 5 (triggers, motion, dark, pick, on)", n)
	}
	// The arm's step sits one level under the choose.
	for id, depth := range map[string]string{"pick": "depth-0", "on": "depth-1", "motion": "depth-1"} {
		re := regexp.MustCompile(`<li id="step-\d+" class="` + depth + ` [^"]*">\s*<div class="step-head">\s*<span class="step-path"><span class="mono">` + id + `</span>`)
		if !re.MatchString(body) {
			t.Errorf("step %s is not drawn at %s", id, depth)
		}
	}
	_, body, _ = c.get("/runs/" + older)
	// The deploy that installed the rule is its first run.
	mustContain(t, "older firing's page", body, `rel="next" href="/runs/`+newer+`"`, `rel="prev" href="/runs/`+deployed+`"`)
	_, body, _ = c.get("/runs/" + deployed)
	mustContain(t, "the deploy's page", body, `rel="next" href="/runs/`+older+`"`, "No earlier run")

	tok := c.csrf("/rules/hall-choose")
	code, _, h := c.post("/rules/hall-choose/test", url.Values{"csrf": {tok}, "trigger": {"motion"}, "value": {"true"}})
	if code != 303 {
		t.Fatalf("test run: %d", code)
	}
	_, body, _ = c.get(h.Get("Location"))
	mustContain(t, "test run page", body, "<h1>Test run of", "virtual clock", `<dt class="mono">trigger.to</dt>`)
	if !strings.Contains(body, "took <span class=\"took\">") {
		t.Error("a test run's steps show no duration")
	}
}
