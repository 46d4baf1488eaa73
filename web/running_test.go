package web

import (
	"regexp"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/storage"
)

// slowRule turns the hall light on, then waits a minute: its firing stays
// "running" through the test.
const slowRule = `{
  "name": "slow-hall",
  "triggers": [{"id": "motion", "state": "hall_motion.occupancy", "to": true}],
  "steps": [{"id": "on", "call": "hall_light.set", "args": {"state": "ON"}},
            {"id": "hold", "delay": "1m"},
            {"id": "off", "call": "hall_light.set", "args": {"state": "OFF"}}]
}`

// runningFiring deploys slowRule, sets off motion and returns its firing
// once it is stored as running.
func (f *fixture) runningFiring() storage.Run {
	f.t.Helper()
	f.deploy(nil, slowRule)
	f.motion(true)
	var runs []storage.Run
	testutil.Eventually(f.t, 10*time.Second, "a running firing", func() bool {
		runs = f.firings("slow-hall")
		return len(runs) > 0 && runs[0].Status == storage.StatusRunning
	})
	return runs[0]
}

// TestRunningHasItsOwnColour: a firing still in its delay is not coloured
// as a failure on the runs list, the rule's page or its own page, and each
// page's colour key names "running".
func TestRunningHasItsOwnColour(t *testing.T) {
	f := newFixture(t, nil)
	run := f.runningFiring()
	c := f.client()
	running := regexp.MustCompile(`<span class="badge ([a-z-]+)">running</span>`)
	for _, path := range []string{"/runs", "/rules/slow-hall", "/runs/" + run.ID} {
		_, body, _ := c.get(path)
		m := running.FindAllStringSubmatch(body, -1)
		if len(m) == 0 {
			t.Errorf("%s: no running badge", path)
		}
		for _, g := range m {
			if g[1] != "st-run" {
				t.Errorf("%s: the running badge is %q, want st-run", path, g[1])
			}
		}
		mustContain(t, path+" colour key", body, `<span class="fk st-run">still running</span>`)
	}
	_, css, _ := c.get("/static/app.css")
	mustContain(t, "the stylesheet", css, ".st-run { background: var(--run-bg); color: var(--run); }", "--run: ")
}
