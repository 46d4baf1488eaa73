package main

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestWebLogbookEndToEnd: an open logbook page shows a remote press and a
// device going offline within 2 s, live; after a reload (from storage)
// too, and the device's page lists its own entries.
func TestWebLogbookEndToEnd(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	base := a.URL()
	ctx := browser(t)
	shot := newShots(t)
	do(t, ctx, "logbook", chromedp.Navigate(base+"/logbook"), chromedp.WaitVisible(chromedp.CSS("#logbook")))
	waitLive(t, ctx)
	// The page notes when each entry arrives, on the browser's clock.
	eval[bool](t, ctx, `(function () {
		window.__seen = {};
		new MutationObserver(function () {
			document.querySelectorAll('#log-table tbody tr').forEach(function (tr) {
				var k = tr.cells[2].textContent;
				if (!(k in window.__seen)) window.__seen[k] = Date.now();
			});
		}).observe(document.getElementById('log-table'), { childList: true, subtree: true });
		return true;
	})()`)
	for _, tc := range []struct {
		what, text string
		act        func() error
	}{
		{"a remote press", `bedroom_remote.action: toggle`, func() error { return a.sim.Press(context.Background(), "single") }},
		{"an availability change", "hall_motion went offline", func() error {
			return a.client.Publish(context.Background(), "zigbee2mqtt/hall_motion/availability", []byte(`{"state":"offline"}`), 1, true)
		}},
	} {
		t0 := eval[float64](t, ctx, `Date.now()`)
		if err := tc.act(); err != nil {
			t.Fatal(err)
		}
		seen := `Object.keys(window.__seen).find(function (k) { return k.indexOf(` + jsString(tc.text) + `) >= 0; })`
		waitJS(t, ctx, tc.what+" in the logbook", seen)
		ms := eval[float64](t, ctx, `window.__seen[`+seen+`]`) - t0
		if ms > 2000 {
			t.Errorf("%s took %.0f ms to show in the logbook, want at most 2 s", tc.what, ms)
		}
		t.Logf("%s: in the logbook after %.0f ms", tc.what, ms)
	}
	shot.take(ctx, "logbook")
	a.eng.FlushLogbook()
	do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#log-table")))
	waitJS(t, ctx, "the stored entries after a reload", `document.getElementById('log-table').textContent.indexOf('hall_motion went offline') >= 0 &&
		document.getElementById('log-table').textContent.indexOf('bedroom_remote.action') >= 0`)
	do(t, ctx, "device page", chromedp.Navigate(base+"/devices/hall_motion"), chromedp.WaitVisible(chromedp.CSS("#logbook")))
	waitJS(t, ctx, "the device's own entries", `document.getElementById('log-table').textContent.indexOf('hall_motion went offline') >= 0 &&
		document.getElementById('log-table').textContent.indexOf('bedroom_remote') < 0`)
	shot.take(ctx, "device-logbook")
}
