package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/storage"
)

// chromium finds the browser for the web e2e test: $PILOTHOUSE_TEST_CHROMIUM,
// else Debian's /usr/bin/chromium.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("PILOTHOUSE_TEST_CHROMIUM"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	t.Skip("web e2e: no browser; set PILOTHOUSE_TEST_CHROMIUM to a Chromium/Chrome binary (or install /usr/bin/chromium)")
	return ""
}

// browser starts a headless Chromium with a fresh profile; the returned
// context runs actions in one tab.
func browser(t *testing.T) context.Context {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// do runs browser actions with a deadline.
func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("browser: evaluate %s: %v", js, err)
	}
	return v
}

// shots saves full-page screenshots at desktop and phone widths.
type shots struct {
	t   *testing.T
	dir string
}

func newShots(t *testing.T) *shots {
	dir := os.Getenv("PILOTHOUSE_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &shots{t: t, dir: dir}
}

func (s *shots) take(ctx context.Context, name string) {
	s.t.Helper()
	for _, v := range []struct {
		label string
		w, h  int64
		opts  []chromedp.EmulateViewportOption
	}{{"desktop", 1280, 900, nil}, {"phone", 390, 844, []chromedp.EmulateViewportOption{chromedp.EmulateMobile}}} {
		do(s.t, ctx, "viewport "+v.label, chromedp.EmulateViewport(v.w, v.h, v.opts...))
		c, cancel := context.WithTimeout(ctx, 15*time.Second)
		png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			s.t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(s.dir, name+"-"+v.label+".png"), png, 0o644); err != nil {
			s.t.Fatal(err)
		}
	}
	do(s.t, ctx, "viewport desktop", chromedp.EmulateViewport(1280, 900))
}

// TestWebEndToEnd drives the web UI in a real browser against the whole
// app: a rule deployed over MCP appears, a motion event shows up live,
// disabling in the UI stops firings, and a guest does not see the lock.
func TestWebEndToEnd(t *testing.T) {
	ownerTok, guestTok := "owner-e2e-token", "guest-e2e-token"
	cfg := testConfig(t)
	cfg.Principals = []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken(ownerTok), Deploy: true},
		{Name: "guest", TokenHash: engine.HashToken(guestTok), Scope: engine.Scope{DenyTypes: []string{"lock", "cover"}, DenyDevices: []string{"notify"}}},
	}
	cfg.StdioAs = "owner"
	a := startTestApp(t, cfg)
	base := a.URL()
	ctx := browser(t)
	shot := newShots(t)

	// Log in as the owner: the empty state.
	do(t, ctx, "login page", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#token")))
	shot.take(ctx, "login")
	login(t, ctx, ownerTok)
	do(t, ctx, "empty rules", chromedp.WaitVisible(chromedp.CSS(".empty")))
	waitLive(t, ctx)
	shot.take(ctx, "rules-empty")

	// Deploy over MCP.
	c := mcpClient(t, base+"/mcp", map[string]string{"Authorization": "Bearer " + ownerTok}, "")
	testutil.Eventually(t, 10*time.Second, "demo catalog", func() bool {
		got, isErr := call(t, c, "pilotage_lookup", map[string]any{"language": "automation/1", "verb": "get", "id": "hall_light.set"})
		return !isErr && got["entry"] != nil
	})
	var prog map[string]any
	_ = json.Unmarshal([]byte(motionLight), &prog)
	dep, _ := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog})
	if dep["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("deploy: %v", dep)
	}

	// The open Rules page says so live; its Reload button lists the rule.
	// A firing then appears live, without a reload.
	row := `tr[data-rule="hall-motion-light"]`
	waitJS(t, ctx, "the install notice", `!document.getElementById('notice').hidden && document.getElementById('notice').textContent.includes('hall-motion-light was installed')`)
	do(t, ctx, "rule listed", chromedp.Click(chromedp.CSS("#notice button")), chromedp.WaitVisible(chromedp.CSS(row)))
	waitLive(t, ctx)
	eval[bool](t, ctx, `window.__sameDocument = true`)
	if got := eval[string](t, ctx, `document.querySelector('`+row+` [data-cell="last"]').textContent.trim()`); got != "never" {
		t.Fatalf("last fired before any event: %q", got)
	}
	motion(t, a, false)
	motion(t, a, true)
	do(t, ctx, "live firing on Rules", chromedp.WaitVisible(chromedp.CSS(row+` [data-cell="last"] a[href^="/runs/"]`)))
	if !eval[bool](t, ctx, `window.__sameDocument === true`) {
		t.Fatal("the page reloaded: the firing did not arrive live")
	}
	shot.take(ctx, "rules")

	// The rule detail prepends a new firing live.
	do(t, ctx, "rule detail", chromedp.Navigate(base+"/rules/hall-motion-light"), chromedp.WaitVisible(chromedp.CSS("#activity")))
	waitLive(t, ctx)
	n0 := eval[int](t, ctx, `document.querySelectorAll('#activity tbody tr').length`)
	motion(t, a, false)
	motion(t, a, true)
	waitJS(t, ctx, "a new firing row on the rule page", `document.querySelectorAll('#activity tbody tr').length > `+itoa(n0))
	shot.take(ctx, "rule")

	// Test run now → the trace.
	do(t, ctx, "test run", chromedp.Click(chromedp.CSS(`form.testrun button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("ol.timeline")))
	if txt := eval[string](t, ctx, `document.querySelector('main').innerText`); !strings.Contains(txt, "Test run finished") || !strings.Contains(txt, "hall_light.set") {
		t.Fatalf("test run page: %s", txt)
	}
	shot.take(ctx, "run-test")

	// A firing's trace.
	fir := firings(t, a, "hall-motion-light")
	do(t, ctx, "firing trace", chromedp.Navigate(base+"/runs/"+fir[0].ID), chromedp.WaitVisible(chromedp.CSS("ol.timeline")))
	shot.take(ctx, "run-firing")

	// Disable in the UI → the next event causes no firing.
	do(t, ctx, "disable", chromedp.Navigate(base+"/rules/hall-motion-light"),
		chromedp.Click(chromedp.CSS(`form[action$="/disable"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/enable"] button`)))
	if ri, _ := a.eng.GetRule(context.Background(), "hall-motion-light", 0); ri.Status != "disabled" {
		t.Fatalf("after Disable: %s", ri.Status)
	}
	// A witness rule on the same trigger fires for the same event: once it
	// has, the disabled rule would have fired too.
	var witness map[string]any
	_ = json.Unmarshal([]byte(strings.Replace(motionLight, `"hall-motion-light"`, `"motion-witness"`, 1)), &witness)
	if dep, _ := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": witness}); dep["outcome"].(map[string]any)["ok"] != true {
		t.Fatalf("deploy witness: %v", dep)
	}
	before := len(firings(t, a, "hall-motion-light"))
	motion(t, a, false)
	motion(t, a, true)
	testutil.Eventually(t, 5*time.Second, "the witness firing", func() bool { return len(firings(t, a, "motion-witness")) > 0 })
	if got := len(firings(t, a, "hall-motion-light")); got != before {
		t.Fatalf("disabled rule fired: %d firings, was %d", got, before)
	}

	// Runs and devices (live values).
	do(t, ctx, "runs", chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(chromedp.CSS("#runs")))
	shot.take(ctx, "runs")
	do(t, ctx, "devices", chromedp.Navigate(base+"/devices"), chromedp.WaitVisible(chromedp.CSS(`#dev-front_lock`)))
	waitLive(t, ctx)
	occ := `document.querySelector('[data-live="hall_motion.occupancy"]').textContent`
	motion(t, a, false)
	waitJS(t, ctx, "occupancy false on Devices", occ+` === "false"`)
	motion(t, a, true)
	waitJS(t, ctx, "occupancy true on Devices, live", occ+` === "true"`)
	shot.take(ctx, "devices")
	// The coverage line counts what /healthz counts.
	if cov, got := a.devs.Coverage(), eval[string](t, ctx, `document.getElementById('coverage').textContent`); cov.Partial+cov.Unmodelled != 0 ||
		got != itoa(cov.Devices)+" devices, all fully modelled." {
		t.Fatalf("coverage line %q for %+v", got, cov)
	}

	// A guest does not see the lock.
	do(t, ctx, "logout", chromedp.Click(chromedp.CSS(`form.who button`)), chromedp.WaitVisible(chromedp.CSS("#token")))
	login(t, ctx, guestTok)
	do(t, ctx, "guest rules", chromedp.WaitVisible(chromedp.CSS(row)))
	do(t, ctx, "guest devices", chromedp.Navigate(base+"/devices"), chromedp.WaitVisible(chromedp.CSS(`#dev-hall_light`)))
	if txt := eval[string](t, ctx, `document.body.innerText`); strings.Contains(txt, "front_lock") || strings.Contains(txt, "notify.phone") {
		t.Fatalf("guest sees the lock or the notifier:\n%s", txt)
	}
	shot.take(ctx, "devices-guest")
	t.Logf("screenshots in %s", shot.dir)
}

func login(t *testing.T, ctx context.Context, token string) {
	t.Helper()
	do(t, ctx, "log in", chromedp.WaitVisible(chromedp.CSS("#token")), chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Submit(chromedp.CSS("#token")), chromedp.WaitVisible(chromedp.CSS("form.who")))
}

// waitLive waits until the page's event stream is connected.
func waitLive(t *testing.T, ctx context.Context) {
	t.Helper()
	waitJS(t, ctx, "the live stream", `document.getElementById('conn') && document.getElementById('conn').classList.contains('on')`)
}

// waitJS polls cond in the page. A condition that throws counts as not yet
// holding, because a click that submits a form leaves the old page in place
// for a moment and then a blank one; the last error is reported at timeout.
func waitJS(t *testing.T, ctx context.Context, what, cond string) {
	t.Helper()
	js := "(() => { try { return (" + cond + ") ? '' : 'false' } catch (e) { return String(e) } })()"
	last := ""
	if !testutil.Within(10*time.Second, func() bool { last = eval[string](t, ctx, js); return last == "" }) {
		t.Fatalf("timed out after 10s waiting for %s (last: %s)", what, last)
	}
}

// motion sets the demo motion sensor and waits until the catalog has seen
// it, so a following check observes its consequences.
func motion(t *testing.T, a *app, on bool) {
	t.Helper()
	if err := a.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": on}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the motion state", func() bool {
		l, ok := a.devs.Live("hall_motion.occupancy")
		return ok && l.Value == on
	})
}

func firings(t *testing.T, a *app, rule string) []storage.Run {
	t.Helper()
	a.eng.Flush()
	runs, err := a.store.ListRuns(context.Background(), storage.RunFilter{Rule: rule, Kind: "firing"})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
