package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestWebSimulateEndToEnd: a demo device's page has a simulate control;
// pressing it in Chromium drives the demo simulator (the path pilothouse
// sim takes) and the page shows the new value. It works without JS too:
// a plain form post and redirect.
func TestWebSimulateEndToEnd(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	base := a.URL()
	ctx := browser(t)
	shot := newShots(t)
	for _, tc := range []struct {
		dev, prop, value string
		live, want       string // the data-live cell and its text after
	}{
		{"hall_motion", "illuminance", "321", "hall_motion.illuminance", "321"},
		{"bedroom_remote", "action", "single", "bedroom_remote.action", "toggle"},
	} {
		do(t, ctx, tc.dev+" page", chromedp.Navigate(base+"/devices/"+tc.dev), chromedp.WaitVisible(chromedp.CSS("#simulate")))
		do(t, ctx, "simulate "+tc.dev, chromedp.SetValue(chromedp.CSS("#sim-prop"), tc.prop),
			chromedp.SendKeys(chromedp.CSS("#sim-value"), tc.value), chromedp.Click(chromedp.CSS("#sim-run")),
			chromedp.WaitVisible(chromedp.CSS(".flash")))
		if flash := eval[string](t, ctx, `document.querySelector('.flash').textContent`); !strings.HasPrefix(flash, "Simulated "+tc.dev+" "+tc.prop+"="+tc.value) {
			t.Fatalf("flash: %q", flash)
		}
		waitJS(t, ctx, tc.live+" shows "+tc.want, `document.querySelector('[data-live="`+tc.live+`"]').textContent === "`+tc.want+`"`)
		testutil.Eventually(t, 5*time.Second, tc.live+" in the catalog", func() bool {
			l, ok := a.devs.Live(tc.live)
			return ok && fmt.Sprint(l.Value) == tc.want
		})
	}
	// The press is on the remote's page's logbook, though it happened just
	// before the page loaded (its entry still queued for writing).
	waitJS(t, ctx, "the press in the device's logbook", `document.getElementById('log-table').textContent.indexOf('bedroom_remote.action: toggle') >= 0`)
	shot.take(ctx, "device-simulate")
}
