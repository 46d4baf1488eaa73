package web

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The web package's own browser checks, in a real headless Chromium:
// $PILOTHOUSE_TEST_CHROMIUM, else Debian's /usr/bin/chromium (skipped,
// saying so, without either). The whole-server e2e tests are in
// cmd/pilothouse.

// browserTab starts a headless Chromium with a fresh profile; the returned
// context runs actions in one tab.
func browserTab(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("PILOTHOUSE_TEST_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		t.Skip("browser test: no browser; set PILOTHOUSE_TEST_CHROMIUM to a Chromium/Chrome binary (or install /usr/bin/chromium)")
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()), chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-sync", true))
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return ctx
}

// inTab runs browser actions with a deadline.
func inTab(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(c, steps...); err != nil {
		t.Fatalf("browser: %s: %v", what, err)
	}
}

// evalIn evaluates js in the tab.
func evalIn[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	c, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(c, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("browser: evaluate %s: %v", js, err)
	}
	return v
}

// TestRunningColourInBrowser: in a real browser, a running firing's badge
// on the runs list, the rule's page and its own page is drawn in the
// running colour of the page's key, not in the failure red.
func TestRunningColourInBrowser(t *testing.T) {
	f := newFixture(t, nil)
	run := f.runningFiring()
	ctx := browserTab(t)
	const colours = `(() => { const bg = s => { const e = document.querySelector(s); return e ? getComputedStyle(e).backgroundColor : "none"; };
		const badge = [...document.querySelectorAll('.badge')].find(e => e.textContent.trim() === 'running');
		return [badge ? getComputedStyle(badge).backgroundColor : "none", bg('.outcome-key .st-run'), bg('.outcome-key .st-bad')]; })()`
	for _, path := range []string{"/runs", "/rules/slow-hall", "/runs/" + run.ID} {
		inTab(t, ctx, "open "+path, chromedp.Navigate(f.srv.URL+path), chromedp.WaitVisible(".outcome-key"))
		c := evalIn[[]string](t, ctx, colours)
		if c[0] == "none" || c[0] != c[1] || c[0] == c[2] {
			t.Errorf("%s: running badge %s, key's running %s, key's failed %s: want the badge in the running colour, unlike failed", path, c[0], c[1], c[2])
		}
	}
}
