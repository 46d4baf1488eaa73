package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/storage"
)

// darkChoose has a condition that reads a state and a choose whose arm
// reads the trigger, so its trace has values read and a nested step.
const darkChoose = `{
  "name": "dark-choose",
  "triggers": [{"id": "motion", "state": "hall_motion.occupancy", "to": true}],
  "conditions": [{"id": "dark", "expr": "state('hall_motion.illuminance') < 5000"}],
  "steps": [{"id": "pick", "choose": [
    {"label": "seen", "when": "trigger.to == true", "do": [{"id": "on", "call": "hall_light.set", "args": {"state": "ON"}}]}
  ]}]
}`

// TestWebTraceFollow: a rule with a condition and a choose fires twice
// over MQTT; at desktop and phone widths its trace page shows each step's
// start time and duration, the values the condition and the choose read,
// the arm's step indented under the choose, and previous/next links that
// go from one firing to the other.
func TestWebTraceFollow(t *testing.T) {
	tok := "owner-trace-token"
	cfg := testConfig(t)
	cfg.Principals = []*engine.Principal{{Name: "owner", TokenHash: engine.HashToken(tok), Deploy: true}}
	a := startTestApp(t, cfg)
	owner := engine.WithPrincipal(context.Background(), cfg.Principals[0])
	if resp, err := a.eng.Execute(owner, engine.ExecuteRequest{Program: json.RawMessage(darkChoose)}); err != nil || !resp.Outcome.OK {
		t.Fatalf("deploy: %v %+v", err, resp)
	}
	var runs []storage.Run
	for i := 1; i <= 2; i++ {
		motion(t, a, false)
		motion(t, a, true)
		testutil.Eventually(t, 10*time.Second, "a firing", func() bool { runs = firings(t, a, "dark-choose"); return len(runs) >= i })
	}
	newer, older := runs[0].ID, runs[1].ID
	base := a.URL()
	ctx := browser(t)
	failOnJSErrors(t, ctx)
	shot := newShots(t)
	do(t, ctx, "login page", chromedp.Navigate(base+"/runs/"+newer), chromedp.WaitVisible(chromedp.CSS("#token")))
	login(t, ctx, tok)

	for _, v := range []struct {
		label string
		w, h  int64
		opts  []chromedp.EmulateViewportOption
	}{{"desktop", 1280, 900, nil}, {"phone", 390, 844, []chromedp.EmulateViewportOption{chromedp.EmulateMobile}}} {
		do(t, ctx, "viewport "+v.label, chromedp.EmulateViewport(v.w, v.h, v.opts...),
			chromedp.Navigate(base+"/runs/"+newer), chromedp.WaitVisible(chromedp.CSS("ol.timeline")))
		checkTracePage(t, ctx, v.label)
		// Previous goes to the older firing, whose next comes back.
		do(t, ctx, "previous run", chromedp.Click(chromedp.CSS(`a[rel=prev]`)), chromedp.WaitVisible(chromedp.CSS(`a[rel=next]`)))
		if got := eval[string](t, ctx, `document.querySelector('.facts dd.mono').textContent`); got != older {
			t.Fatalf("%s: previous run is %s, want %s", v.label, got, older)
		}
		do(t, ctx, "next run", chromedp.Click(chromedp.CSS(`a[rel=next]`)), chromedp.WaitVisible(chromedp.CSS(`a[rel=prev]`)))
		if got := eval[string](t, ctx, `document.querySelector('.facts dd.mono').textContent`); got != newer {
			t.Fatalf("%s: next run is %s, want %s", v.label, got, newer)
		}
	}
	shot.take(ctx, "trace")
	t.Logf("screenshots in %s", shot.dir)
}

// checkTracePage checks what the trace page shows, as laid out in the
// browser: times, durations, the values read, the nesting.
func checkTracePage(t *testing.T, ctx context.Context, label string) {
	t.Helper()
	if h := eval[string](t, ctx, `document.querySelector('h1').textContent.replace(/\s+/g, ' ').trim()`); !strings.HasPrefix(h, "Firing of dark-choose") {
		t.Fatalf("%s: heading %q", label, h)
	}
	times := eval[[]string](t, ctx, `[...document.querySelectorAll('.timeline .step-time')].map(e => e.innerText)`)
	if len(times) != 5 {
		t.Fatalf("%s: %d steps with a time, want 5: %v", label, len(times), times)
	}
	for _, s := range times {
		if len(s) < len("00:00:00.000 · took 0 ms") || s[2] != ':' || !strings.Contains(s, "took ") {
			t.Errorf("%s: step time %q: want a time of day and a duration", label, s)
		}
	}
	reads := eval[string](t, ctx, `[...document.querySelectorAll('.timeline .reads')].map(e => e.innerText).join('\n')`)
	for _, want := range []string{"state('hall_motion.illuminance')", "trigger.to", "true"} {
		if !strings.Contains(reads, want) {
			t.Errorf("%s: values read %q lack %q", label, reads, want)
		}
	}
	// The arm's step is drawn to the right of its choose, inside the page.
	indent := eval[[]float64](t, ctx, `(() => { const x = id => [...document.querySelectorAll('.timeline li')].find(li => li.querySelector('.step-path').innerText === id).getBoundingClientRect();
		return [x('pick').left, x('on').left, x('on').right, document.documentElement.clientWidth]; })()`)
	if indent[1] <= indent[0] || indent[2] > indent[3] {
		t.Errorf("%s: choose at x=%v, its arm's step at x=%v..%v (page %v): want it indented and on the page", label, indent[0], indent[1], indent[2], indent[3])
	}
}
