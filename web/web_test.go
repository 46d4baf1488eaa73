package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

func TestRulesPageEmptyState(t *testing.T) {
	f := newFixture(t, nil)
	code, body, h := f.client().get("/")
	if code != 200 {
		t.Fatalf("GET /: %d", code)
	}
	mustContain(t, "empty rules page", body,
		"No rules yet", "With an assistant (MCP)", "/mcp</code>", "From a terminal", "pilothouse apply examples/rules/hall-motion-light.json",
		"turn on the hall light when motion is detected after dark")
	if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
		t.Errorf("CSP: %q", csp)
	}
	for _, c := range (&http.Response{Header: h}).Cookies() {
		if c.Name == cookieName && (!c.HttpOnly || c.SameSite != http.SameSiteStrictMode) {
			t.Errorf("session cookie attributes: %+v", c)
		}
	}
}

func TestRulesListDetailAndRun(t *testing.T) {
	f := newFixture(t, nil)
	dep := f.deploy(nil, motionRule)
	f.deploy(nil, lockRule)
	c := f.client()
	// Its deploy's run names the rule, but is no firing.
	_, body, _ := c.get("/rules/night-lock")
	mustContain(t, "a rule that never fired", body, `id="no-activity"`)

	_, body, _ = c.get("/")
	mustContain(t, "rules page", body,
		`href="/rules/hall-motion-light"`, "Hall light on when motion is seen",
		"hall_motion.occupancy to true", `badge risk-control`, `badge risk-security`,
		"at 23:00", ">never<", `data-rule="night-lock"`)

	f.motion(true)
	var runs []storage.Run
	testutil.Eventually(t, 5*time.Second, "a firing", func() bool { runs = f.firings("hall-motion-light"); return len(runs) > 0 })
	_, body, _ = c.get("/")
	mustContain(t, "rules page after a firing", body, `href="/runs/`+runs[0].ID+`"`, runs[0].Status)

	_, body, _ = c.get("/rules/hall-motion-light")
	mustContain(t, "rule detail", body,
		"Plan", `<span class="mono step-id">on</span>`, "hall_light.set", // plan step with its call
		`&#34;brightness&#34;: 180`,                    // pretty program JSON
		dep.Output.(*pilotage.DeployOutput).ProgramRef, // promoted version
		`/runs/`+runs[0].ID, "Disable", "Remove", "Test run now", `<option value="motion">`,
		"Firings kept: the last 50 of each outcome, for 30 days, within 16 MiB for this rule and 256 MiB")

	code, body, _ := c.get("/runs/" + runs[0].ID)
	if code != 200 {
		t.Fatalf("run page: %d", code)
	}
	mustContain(t, "run page", body, "Timeline", `<span class="mono">triggers</span>`, "took <strong class=\"mono\">motion</strong>",
		`<span class="mono">on</span>`, "hall_light.set", `href="/rules/hall-motion-light"`,
		"<dd>The run succeeded.</dd>", `Rule &#34;hall-motion-light&#34; fired at `, "It called hall_light.set (step &#34;on&#34;)")
	mustNotContain(t, "run page", body, "ok=true", "ok=false", "(s)")

	code, _, _ = c.get("/rules/nope")
	if code != 404 {
		t.Errorf("unknown rule: %d", code)
	}
	code, _, _ = c.get("/runs/run_nope")
	if code != 404 {
		t.Errorf("unknown run: %d", code)
	}
}

func TestConditionsNotMetAndTraceIdentity(t *testing.T) {
	f := newFixture(t, nil)
	runs := f.darkOnlyFired()
	c := f.client()
	_, body, _ := c.get("/rules/dark-only")
	mustContain(t, "rule detail", body, "conditions not met")
	_, body, _ = c.get("/runs/" + runs[0].ID)
	mustContain(t, "run page", body, "conditions not met", `<span class="mono">dark</span>`)
}

func TestRuleActionsNeedCSRF(t *testing.T) {
	f := newFixture(t, nil)
	f.deploy(nil, motionRule)
	c := f.client()
	tok := c.csrf("/rules/hall-motion-light")

	code, _, _ := c.post("/rules/hall-motion-light/disable", url.Values{})
	if code != http.StatusForbidden {
		t.Fatalf("POST without csrf: %d", code)
	}
	code, _, _ = c.post("/rules/hall-motion-light/disable", url.Values{"csrf": {"forged"}})
	if code != http.StatusForbidden {
		t.Fatalf("POST with a wrong csrf: %d", code)
	}
	// Another browser's token is not this session's.
	other := f.client().csrf("/rules/hall-motion-light")
	code, _, _ = c.post("/rules/hall-motion-light/disable", url.Values{"csrf": {other}})
	if code != http.StatusForbidden {
		t.Fatalf("POST with another session's csrf: %d", code)
	}
	// Cross-origin form posts are refused even with the token.
	req, _ := http.NewRequest(http.MethodPost, c.base+"/rules/hall-motion-light/disable", strings.NewReader(url.Values{"csrf": {tok}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://evil.example")
	if code, _, _ := c.do(req); code != http.StatusForbidden {
		t.Fatalf("cross-origin POST: %d", code)
	}
	if ri, _ := f.e.GetRule(context.Background(), "hall-motion-light", 0); ri.Status != "enabled" {
		t.Fatalf("rule changed by a refused POST: %s", ri.Status)
	}

	code, _, h := c.post("/rules/hall-motion-light/disable", url.Values{"csrf": {tok}})
	if code != http.StatusSeeOther || h.Get("Location") != "/rules/hall-motion-light" {
		t.Fatalf("disable: %d %v", code, h)
	}
	if ri, _ := f.e.GetRule(context.Background(), "hall-motion-light", 0); ri.Status != "disabled" {
		t.Fatalf("after disable: %s", ri.Status)
	}
	_, body, _ := c.get("/rules/hall-motion-light")
	mustContain(t, "after disable", body, "disabled: its triggers are disarmed", `action="/rules/hall-motion-light/enable"`)

	// Disabled: motion causes no firing.
	f.motion(true)
	f.motion(false)
	f.motion(true)
	if n := len(f.firings("hall-motion-light")); n != 0 {
		t.Fatalf("disabled rule fired %d times", n)
	}

	code, _, h = c.post("/rules/hall-motion-light/test", url.Values{"csrf": {tok}, "trigger": {"motion"}, "value": {"true"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/runs/") {
		t.Fatalf("test run: %d %v", code, h)
	}
	_, body, _ = c.get(h.Get("Location"))
	mustContain(t, "test run trace", body, "Test run finished: success", "hall_light.set", "took <strong class=\"mono\">motion</strong>")

	code, _, h = c.post("/rules/hall-motion-light/remove", url.Values{"csrf": {tok}})
	if code != http.StatusSeeOther || h.Get("Location") != "/" {
		t.Fatalf("remove: %d %v", code, h)
	}
	_, body, _ = c.get("/")
	mustContain(t, "after remove", body, "Rule hall-motion-light removed", "No rules yet")
}

func TestRunsPageFiltersAndPages(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	base := time.Now().Add(-time.Hour)
	var runs []storage.Run
	for i := range 120 {
		ok := i%3 != 0
		status := map[bool]string{true: "success", false: "failed"}[ok]
		id := storage.NewRunID()
		runs = append(runs, storage.Run{ID: id, Principal: "owner", Rule: "r", Kind: "firing", Status: status, OK: ok,
			Started: base.Add(time.Duration(i) * time.Second), Level: "full",
			Envelope: []byte(`{"run_id":"` + id + `","outcome":{"ok":true,"status":"success"},"trace":{"level":"full","steps":[]}}`)})
	}
	if err := f.store.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	c := f.client()
	_, body, _ := c.get("/runs")
	if n := strings.Count(body, `data-label="Run"`); n != runsPageSize {
		t.Fatalf("first page rows: %d", n)
	}
	mustContain(t, "first page", body, runs[119].ID, `rel="next"`)
	mustNotContain(t, "first page", body, runs[0].ID)
	// Large pages are compressed for clients that ask.
	req, _ := http.NewRequest(http.MethodGet, c.base+"/runs", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	if resp, err := c.c.Do(req); err != nil || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Errorf("gzip: %v %v", err, resp.Header)
	} else {
		resp.Body.Close()
	}
	_, body, _ = c.get("/runs?before=" + runs[70].ID)
	mustContain(t, "second page", body, runs[69].ID, runs[20].ID, "« Newest", `rel="prev"`, "after="+runs[69].ID)
	mustNotContain(t, "second page", body, runs[70].ID, runs[19].ID)
	// One page newer than that: the 50 runs just above it, and older again.
	_, body, _ = c.get("/runs?after=" + runs[69].ID)
	mustContain(t, "newer page", body, runs[70].ID, runs[119].ID, `rel="next"`, "before="+runs[70].ID)
	mustNotContain(t, "newer page", body, runs[69].ID, `rel="prev"`)
	_, body, _ = c.get("/runs?after=" + runs[9].ID)
	mustContain(t, "a newer page below the top", body, runs[10].ID, runs[59].ID, `rel="prev"`, `rel="next"`)
	mustNotContain(t, "a newer page below the top", body, runs[9].ID, runs[60].ID)

	_, body, _ = c.get("/runs?outcome=failed")
	if n := strings.Count(body, `data-label="Run"`); n != 40 {
		t.Fatalf("failed rows: %d", n)
	}
	mustNotContain(t, "failed filter", body, `badge st-ok">success`)
	_, body, _ = c.get("/runs?outcome=success&kind=deploy")
	mustContain(t, "no deploys", body, "No runs match.")
	if code, _, _ := c.get("/runs?kind=bogus"); code != 400 {
		t.Errorf("bad kind: %d", code)
	}
	if code, _, _ := c.get("/runs?before=garbage"); code != 400 {
		t.Errorf("bad cursor: %d", code)
	}
}

func TestDevicesPage(t *testing.T) {
	f := newFixture(t, nil)
	_, body, _ := f.client().get("/devices")
	mustContain(t, "devices page", body,
		`id="dev-hall_light"`, `id="dev-hall_motion"`, `id="dev-front_lock"`,
		`data-live="hall_motion.occupancy">false<`, `data-live="hall_motion.illuminance">12<`,
		`hall_light.set</span> <span class="badge risk-control">control`,
		`front_lock.set</span> <span class="badge risk-security">security`,
		`notify.phone</span> <span class="badge risk-external">external`)
}

// TestEventsStream reads /events like a browser: a firing, a rule change
// and a live device value arrive, scoped.
func TestEventsStream(t *testing.T) {
	f := newFixture(t, nil)
	f.deploy(nil, motionRule)
	c := f.client()
	c.get("/") // session cookie
	lines := openStreamAt(t, c, "/events?devices=1")
	f.motion(true)
	want := map[string]string{
		"event: firing": `"rule":"hall-motion-light"`,
		"event: live":   `"id":"hall_motion.occupancy","value":"true"`,
	}
	expectEvents(t, lines, want)
	if _, err := f.e.SetRuleEnabled(context.Background(), "hall-motion-light", false); err != nil {
		t.Fatal(err)
	}
	expectEvents(t, lines, map[string]string{"event: rule": `"status":"disabled"`})
}

func expectEvents(t *testing.T, lines <-chan string, want map[string]string) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	var event string
	for len(want) > 0 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("stream ended; still waiting for %v", want)
			}
			if strings.HasPrefix(l, "event: ") {
				event = l
				continue
			}
			if sub, ok := want[event]; ok && strings.HasPrefix(l, "data: ") && strings.Contains(l, sub) {
				delete(want, event)
			}
		case <-timeout:
			t.Fatalf("timed out waiting for %v", want)
		}
	}
}

// TestEventsLiveThroughEngine: the UI holds no device catalog of its own;
// live values reach the stream through the engine's scoped watch.
func TestEventsLiveThroughEngine(t *testing.T) {
	f := newFixture(t, nil)
	srv := httptest.NewServer(Handler(f.e, Options{Logger: quiet()}))
	defer srv.Close()
	c := f.client()
	c.base = srv.URL
	c.get("/devices")
	lines := openStreamAt(t, c, "/events?devices=1")
	f.devs.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/hall_motion", Payload: []byte(`{"illuminance":99}`)})
	expectEvents(t, lines, map[string]string{"event: live": `"id":"hall_motion.illuminance","value":"99"`})
}

// TestPlanMarkersAndIterations: branch arms and loops are marked in the
// plan; the trace shows iteration identity (blink#2) and decisions.
func TestPlanMarkersAndIterations(t *testing.T) {
	f := newFixture(t, nil)
	f.deploy(nil, `{
  "name": "blinker",
  "triggers": [{"id": "motion", "state": "hall_motion.occupancy", "to": true}],
  "steps": [
    {"id": "late", "if": "state('hall_motion.illuminance') < 50",
     "then": [{"id": "dim", "call": "hall_light.set", "args": {"brightness": 20}}],
     "else": [{"id": "off", "call": "hall_light.set", "args": {"state": "OFF"}}]},
    {"id": "blink", "repeat": {"count": 2}, "do": [{"id": "flash", "call": "hall_light.set", "args": {"state": "TOGGLE"}}]}
  ]
}`)
	c := f.client()
	_, body, _ := c.get("/rules/blinker")
	mustContain(t, "plan", body, `⎇ late: then`, `⎇ late: else`, `↻ loop blink`)
	tok := c.csrf("/rules/blinker")
	_, _, h := c.post("/rules/blinker/test", url.Values{"csrf": {tok}, "trigger": {"motion"}, "value": {"true"}})
	_, body, _ = c.get(h.Get("Location"))
	mustContain(t, "trace", body,
		`class="depth-1 st-ok">`,
		`<span class="mono">flash</span><span class="iter" title="iteration / expansion">#2</span>`,
		`at <span class="mono">late</span> took <strong class="mono">then</strong>`,
		`href="/rules/blinker"`)
	if t.Failed() {
		i := strings.Index(body, "Timeline")
		t.Log(body[i:])
	}
}

// TestEventsDeploy: pages that list rules hear about installs, which the
// engine announces no event for.
func TestEventsDeploy(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	c.get("/")
	lines := openStreamAt(t, c, "/events?deploys=1")
	f.deploy(nil, motionRule)
	expectEvents(t, lines, map[string]string{"event: deploy": `"rule":"hall-motion-light"`})
}

// TestRunFailure: a failed run names its failing step, with the error.
func TestRunFailure(t *testing.T) {
	f := newFixture(t, nil)
	id := storage.NewRunID()
	env := `{"run_id":"` + id + `","outcome":{"ok":false,"status":"failed","error":"a step failed"},"trace":{"level":"full","steps":[
	 {"id":"triggers","outcome":{"ok":true,"status":"success"},"decisions":[{"at":"triggers","took":"motion","because":"hall_motion.occupancy changed from false to true"}]},
	 {"id":"call#1/inner#3","calls":["hall_light.set"],"input":{"state":"ON"},"outcome":{"ok":false,"status":"not_connected","error":"the MQTT broker is unreachable"},"t_ms":12.5}]}}`
	err := f.store.InsertRuns(context.Background(), []storage.Run{{ID: id, Principal: "owner", Rule: "r", Kind: "firing",
		Status: "failed", Started: time.Now(), Level: "full", Envelope: []byte(env), Expires: time.Now().Add(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := f.client().get("/runs/" + id)
	mustContain(t, "failed run", body,
		`Failed at step <a class="mono" href="#step-2">call#1/inner#3</a> (not connected): the MQTT broker is unreachable`,
		`<span class="mono">call</span><span class="iter" title="iteration / expansion">#1</span><span class="sep" aria-hidden="true">›</span><span class="mono">inner</span><span class="iter" title="iteration / expansion">#3</span>`,
		`class="depth-2 st-bad"`, `<span class="step-time"><time title=`, `&#34;state&#34;: &#34;ON&#34;`)
}

// TestRulesAddressShowsTheList: /rules/NAME is a rule, so /rules (a person
// trimming the address) leads to the list rather than a plain 404.
func TestRulesAddressShowsTheList(t *testing.T) {
	f := newFixture(t, nil)
	f.deploy(nil, motionRule)
	c := f.client()
	for _, tc := range []struct{ path, to string }{
		{"/rules", "/"},
		{"/rules/", "/"},
		{"/rules?x=1", "/?x=1"},
	} {
		code, _, h := c.get(tc.path)
		if code != http.StatusFound || h.Get("Location") != tc.to {
			t.Errorf("GET %s: %d to %q, want %d to %q", tc.path, code, h.Get("Location"), http.StatusFound, tc.to)
			continue
		}
		_, body, _ := c.get(h.Get("Location"))
		mustContain(t, "the list "+tc.path+" leads to", body, `href="/rules/hall-motion-light"`)
	}
}
