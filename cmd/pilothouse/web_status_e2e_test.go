package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
)

// text is the visible text of the first element matching sel ("" when
// there is none).
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return eval[string](t, ctx, `(function(){ var n = document.querySelector(`+jsString(sel)+`); return n ? n.innerText : "" })()`)
}

func jsString(s string) string { b, _ := json.Marshal(s); return string(b) }

// mustHave fails unless got holds every want.
func mustHave(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Fatalf("%s: %q missing from:\n%s", what, w, got)
		}
	}
}

// TestWebBrokerState: with an external broker that stops, the indicator
// leaves "live" for "broker unreachable" and a banner says what that
// means, on the open page and on every page loaded meanwhile, until the
// broker is back. The empty Devices page says which broker and topics
// Pilothouse waits on, and what to do (issue 19, point 3).
func TestWebBrokerState(t *testing.T) {
	broker, err := mqtt.StartBroker("127.0.0.1:0", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Close() })
	addr, brokerURL := broker.Addr(), broker.URL()
	cfg := testConfig(t)
	cfg.Broker, cfg.Demo = brokerURL, false
	a := startTestApp(t, cfg)
	ctx := browser(t)
	failOnJSErrors(t, ctx)
	shot := newShots(t)

	do(t, ctx, "empty devices", chromedp.Navigate(a.URL()+"/devices"), chromedp.WaitVisible(chromedp.CSS("#empty")))
	waitLive(t, ctx)
	if got := text(t, ctx, "#conn"); got != "live" {
		t.Fatalf("indicator with the broker up: %q", got)
	}
	mustHave(t, "empty devices page", text(t, ctx, "#empty"), "connected to the MQTT broker "+brokerURL,
		"zigbee2mqtt/bridge/devices", "homeassistant/#", "mqtt.base_topic: zigbee2mqtt", "--z2m-base", "--ha-prefix",
		"pilothouse sim --broker "+brokerURL)
	shot.take(ctx, "devices-empty")

	_ = broker.Close()
	waitJS(t, ctx, "the open page says the broker is unreachable", `document.getElementById('conn').textContent === 'broker unreachable'
		&& document.getElementById('conn').classList.contains('off') && !document.getElementById('trouble').hidden`)
	mustHave(t, "banner", text(t, ctx, "#trouble"), "No connection to the MQTT broker "+brokerURL+": connection to the broker lost", "rules cannot switch anything")
	shot.take(ctx, "broker-down")

	// Pages loaded while it is down say so from the start, before any poll.
	for _, path := range []string{"/", "/runs", "/devices"} {
		do(t, ctx, "load "+path, chromedp.Navigate(a.URL()+path), chromedp.WaitReady(chromedp.CSS("#conn")))
		if c, tr := text(t, ctx, "#conn"), text(t, ctx, "#trouble"); c != "broker unreachable" || !strings.Contains(tr, brokerURL) {
			t.Fatalf("%s rendered with the broker down: indicator %q, banner %q", path, c, tr)
		}
	}
	mustHave(t, "empty devices page, broker down", text(t, ctx, "#empty"), "not connected to the MQTT broker "+brokerURL)

	back, err := mqtt.StartBroker(addr, quietLogger())
	if err != nil {
		t.Fatalf("restarting the broker on %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = back.Close() })
	testutil.Eventually(t, 30*time.Second, "the indicator live again", func() bool {
		return eval[bool](t, ctx, `document.getElementById('conn').textContent === 'live' && document.getElementById('trouble').hidden`)
	})
}

// TestWebEmptyRulesAndRuns: with no rules and no runs, both pages say how
// to get some (MCP and the CLI).
func TestWebEmptyRulesAndRuns(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	ctx := browser(t)
	failOnJSErrors(t, ctx)
	shot := newShots(t)
	do(t, ctx, "rules", chromedp.Navigate(a.URL()+"/"), chromedp.WaitVisible(chromedp.CSS("#empty")))
	mustHave(t, "empty rules page", text(t, ctx, "#empty"), "No rules yet", a.URL()+"/mcp", "pilothouse stdio",
		"pilothouse apply examples/rules/hall-motion-light.json")
	waitLive(t, ctx)
	shot.take(ctx, "rules-empty")
	do(t, ctx, "runs", chromedp.Navigate(a.URL()+"/runs"), chromedp.WaitVisible(chromedp.CSS("#empty")))
	mustHave(t, "empty runs page", text(t, ctx, "#empty"), "No runs yet", "each time a rule fires", "pilothouse test")
	shot.take(ctx, "runs-empty")
	// A filter that matches nothing is no empty house.
	do(t, ctx, "filtered runs", chromedp.Navigate(a.URL()+"/runs?kind=deploy"), chromedp.WaitReady(chromedp.CSS("#runs")))
	if got := eval[bool](t, ctx, `!!document.getElementById('empty')`); got || !strings.Contains(text(t, ctx, "main"), "No runs match") {
		t.Fatal("a filtered, empty run list shows the empty-house help")
	}
}

const nightLock = `{"name":"night-lock","triggers":[{"id":"night","at":"23:00"}],
 "steps":[{"id":"lock","call":"front_lock.set","args":{"state":"LOCK"}}]}`

const porchEvening = `{"name":"porch-evening","triggers":[{"id":"dusk","at":"19:00"}],
 "steps":[{"id":"on","call":"porch_light.set","args":{"state":"ON"}}]}`

// zoned matches a tooltip's local time with its zone: Berlin is CET or CEST.
var zoned = regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CES?T \(Europe/Berlin\)$`)

// TestWebRulesThatCannotFire: under time_zone Europe/Berlin, lists show
// relative times with the local time and zone in the tooltip; a disabled
// rule says so instead of "on event"; a rule whose device left the
// catalog says it cannot fire and what is missing (in the UI and the
// pilothouse_rules tool); a rule whose program no longer compiles says it
// is broken (issue 19, point 3).
func TestWebRulesThatCannotFire(t *testing.T) {
	cfg := testConfig(t)
	cfg.TimeZone = "Europe/Berlin"
	cfg.Approval = engine.ApprovalPolicy{Require: []string{}} // the night lock sets the scene
	a := startTestApp(t, cfg)
	owner := engine.WithPrincipal(context.Background(), engine.Owner)
	for _, p := range []string{motionLight, nightLock, porchEvening} {
		if resp, err := a.eng.Execute(owner, engine.ExecuteRequest{Program: json.RawMessage(p)}); err != nil || !resp.Outcome.OK {
			t.Fatalf("deploy: %v %+v", err, resp)
		}
	}
	ctx := browser(t)
	failOnJSErrors(t, ctx)
	shot := newShots(t)
	do(t, ctx, "rules", chromedp.Navigate(a.URL()+"/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-rule="night-lock"]`)))
	waitLive(t, ctx)
	checkZonedTimes(t, ctx, a)

	// Disable from the rule page: it says so, and so does the list.
	do(t, ctx, "disable porch-evening", chromedp.Navigate(a.URL()+"/rules/porch-evening"),
		chromedp.Click(chromedp.CSS(`form[action$="/disable"] button`)), chromedp.WaitVisible(chromedp.CSS(`form[action$="/enable"] button`)))
	if got := text(t, ctx, "#next"); got != "disabled: its triggers are disarmed" {
		t.Fatalf("disabled rule, next scheduled: %q", got)
	}
	shot.take(ctx, "rule-disabled")

	// The hall light leaves: the motion rule cannot fire.
	if err := a.sim.Remove("hall_light"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the light gone", func() bool { _, ok := a.devs.Snapshot().Get("hall_light.set"); return !ok })
	checkCannotFire(t, ctx, a, shot)

	// A program that no longer compiles (here: edited in the database
	// behind the server's back) makes its rule broken at the next start.
	a.stop()
	corruptProgram(t, cfg.DataDir, "porch-evening", "porch_light.set", "porch_light.gone")
	a = startTestApp(t, cfg)
	do(t, ctx, "rules after the restart", chromedp.Navigate(a.URL()+"/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-rule="porch-evening"]`)))
	row := `tr[data-rule="porch-evening"] `
	mustHave(t, "broken rule row", text(t, ctx, row+`[data-cell="status"]`), "broken", "its program no longer compiles")
	if got := text(t, ctx, row+`[data-cell="next"]`); got != "none: broken" {
		t.Fatalf("broken rule, next: %q", got)
	}
	do(t, ctx, "broken rule page", chromedp.Navigate(a.URL()+"/rules/porch-evening"), chromedp.WaitVisible(chromedp.CSS("#cannot-fire")))
	mustHave(t, "broken rule page", text(t, ctx, "#cannot-fire"), "broken and cannot fire", "its program no longer compiles")
	if got := text(t, ctx, "dl.facts dd"); got != "— (its program could not be loaded)" {
		t.Fatalf("broken rule, triggers: %q", got)
	}
	if got := text(t, ctx, "#next"); got != "none: the rule is broken" {
		t.Fatalf("broken rule, next scheduled: %q", got)
	}
	shot.take(ctx, "rule-broken")
}

// checkZonedTimes: the next time of a scheduled rule and a live firing
// read relatively, with the local time and zone in their tooltips; the
// Runs list too; a run's page gives the local time with its zone.
func checkZonedTimes(t *testing.T, ctx context.Context, a *app) {
	t.Helper()
	next := `tr[data-rule="night-lock"] [data-cell="next"] time`
	got := eval[[]string](t, ctx, `(function(){ var n = document.querySelector('`+next+`'); return [n.textContent, n.title] })()`)
	if !strings.HasPrefix(got[0], "in ") || !zoned.MatchString(got[1]) || !strings.Contains(got[1], " 23:00:00 ") {
		t.Fatalf("night-lock next: text %q, tooltip %q", got[0], got[1])
	}
	if got := text(t, ctx, `tr[data-rule="hall-motion-light"] [data-cell="next"]`); got != "on event" {
		t.Fatalf("hall-motion-light next: %q", got)
	}
	motion(t, a, false)
	motion(t, a, true)
	last := `tr[data-rule="hall-motion-light"] [data-cell="last"] time`
	waitJS(t, ctx, "the live firing, relative", `document.querySelector('`+last+`') && document.querySelector('`+last+`').textContent === 'just now'`)
	if title := eval[string](t, ctx, `document.querySelector('`+last+`').title`); !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CES?T$`).MatchString(title) {
		t.Fatalf("live firing tooltip: %q", title)
	}
	do(t, ctx, "runs", chromedp.Navigate(a.URL()+"/runs"), chromedp.WaitVisible(chromedp.CSS("#runs tbody tr time")))
	got = eval[[]string](t, ctx, `(function(){ var n = document.querySelector('#runs tbody tr time'); return [n.textContent, n.title] })()`)
	if got[0] != "just now" || !zoned.MatchString(got[1]) {
		t.Fatalf("runs list time: text %q, tooltip %q", got[0], got[1])
	}
	do(t, ctx, "a run", chromedp.Click(chromedp.CSS("#runs tbody tr a.mono")), chromedp.WaitVisible(chromedp.CSS("dl.facts time")))
	if got := text(t, ctx, "dl.facts time"); !regexp.MustCompile(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d CES?T$`).MatchString(got) {
		t.Fatalf("run page start: %q", got)
	}
}

// checkCannotFire: the list, the rule page and pilothouse_rules name the
// missing entry of a rule whose device left.
func checkCannotFire(t *testing.T, ctx context.Context, a *app, shot *shots) {
	t.Helper()
	row := `tr[data-rule="hall-motion-light"] `
	do(t, ctx, "rules", chromedp.Navigate(a.URL()+"/"), chromedp.WaitVisible(chromedp.CSS(row+"td")))
	mustHave(t, "rule row", text(t, ctx, row+`[data-cell="status"]`), "enabled", "cannot fire", "not in the catalog: hall_light.set")
	if got := text(t, ctx, row+`[data-cell="next"]`); got != "none: entries missing" {
		t.Fatalf("missing device, next: %q", got)
	}
	if got := text(t, ctx, `tr[data-rule="porch-evening"] [data-cell="next"]`); got != "disabled" {
		t.Fatalf("disabled rule, next: %q", got)
	}
	shot.take(ctx, "rules-cannot-fire")
	do(t, ctx, "rule page", chromedp.Navigate(a.URL()+"/rules/hall-motion-light"), chromedp.WaitVisible(chromedp.CSS("#cannot-fire")))
	mustHave(t, "rule page", text(t, ctx, "#cannot-fire"), "This rule cannot fire: hall_light.set is not in the catalog")
	if got := text(t, ctx, "#next"); got != "none: entries are missing" {
		t.Fatalf("missing device, next scheduled: %q", got)
	}
	shot.take(ctx, "rule-cannot-fire")
	c := mcpClient(t, a.URL()+"/mcp", nil, "")
	out, isErr := call(t, c, "pilothouse_rules", map[string]any{"last_firings": 0})
	b, _ := json.Marshal(out)
	if isErr || !strings.Contains(string(b), `"missing":["hall_light.set"]`) {
		t.Fatalf("pilothouse_rules: %s", b)
	}
}

// corruptProgram edits the stored programs of a rule so that they no
// longer validate.
func corruptProgram(t *testing.T, dir, rule, from, to string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(filepath.Join(dir, storage.FileName)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Exec(`UPDATE programs SET body = replace(body, ?, ?) WHERE name = ?`, from, to, rule)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		t.Fatalf("no stored program of %s", rule)
	}
}

// TestWebStorageState: storage that cannot write (the database locked by
// another process) turns the indicator to "storage failing" with a banner
// saying what fails, until the lock goes.
func TestWebStorageState(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	ctx := browser(t)
	failOnJSErrors(t, ctx)
	shot := newShots(t)
	do(t, ctx, "rules", chromedp.Navigate(a.URL()+"/"), chromedp.WaitVisible(chromedp.CSS("#empty")))
	waitLive(t, ctx)

	// The lock waits out a write the house is making (the recorder, the
	// state history), as the server's own connections do.
	db, err := sql.Open("sqlite", "file:"+filepath.ToSlash(filepath.Join(a.cfg.DataDir, storage.FileName))+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	// A write that fails: a stored test run.
	var prog map[string]any
	_ = json.Unmarshal([]byte(motionLight), &prog)
	c := mcpClient(t, a.URL()+"/mcp", nil, "")
	if _, isErr := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog, "test_run": true}); !isErr {
		t.Fatal("a stored test run with the database locked succeeded")
	}
	waitJS(t, ctx, "the indicator says storage fails", `document.getElementById('conn').textContent === 'storage failing' && !document.getElementById('trouble').hidden`)
	mustHave(t, "banner", text(t, ctx, "#trouble"), "Storage cannot write since", "locked", "runs are not recorded")
	shot.take(ctx, "storage-failing")

	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 30*time.Second, "the indicator live again", func() bool {
		return eval[bool](t, ctx, `document.getElementById('conn').textContent === 'live' && document.getElementById('trouble').hidden`)
	})
}
