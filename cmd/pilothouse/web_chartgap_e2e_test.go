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
)

// illuminance sets the demo motion sensor's illuminance over MQTT and
// waits until its history is stored.
func illuminance(t *testing.T, a *app, lx float64) {
	t.Helper()
	if err := a.sim.Trigger(context.Background(), "hall_motion", map[string]any{"illuminance": lx}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the illuminance", func() bool {
		l, ok := a.devs.Live("hall_motion.illuminance")
		return ok && l.Value == lx
	})
	a.eng.FlushHistory()
}

// TestWebChartGapAcrossRestart: the server records a sensor, stops and
// starts again on the same data folder; in the browser, at desktop and
// phone widths, the sensor's chart (its default range fitted to the few
// seconds of data) breaks the line at the stop and hatches the downtime
// instead of holding the last value across it.
func TestWebChartGapAcrossRestart(t *testing.T) {
	tok := "owner-gap-token"
	cfg := testConfig(t)
	cfg.Principals = []*engine.Principal{{Name: "owner", TokenHash: engine.HashToken(tok), Deploy: true}}
	a := startTestApp(t, cfg)
	illuminance(t, a, 30)
	illuminance(t, a, 35)
	a.stop()
	a = startTestApp(t, cfg)
	illuminance(t, a, 80)

	base := a.URL()
	ctx := browser(t)
	failOnJSErrors(t, ctx)
	shot := newShots(t)
	do(t, ctx, "login page", chromedp.Navigate(base+"/devices/hall_motion"), chromedp.WaitVisible(chromedp.CSS("#token")))
	login(t, ctx, tok)
	shotCharts(t, ctx, shot, base+"/devices/hall_motion", "chart-gap", 2)
	for _, width := range []int64{1280, 390} {
		do(t, ctx, "viewport", chromedp.EmulateViewport(width, 844), chromedp.Navigate(base+"/devices/hall_motion"))
		waitCharts(t, ctx, 2)
		if got := eval[string](t, ctx, `document.body.getAttribute('data-gaps-drawn')`); got != "1" {
			t.Errorf("width %d: %q downtimes drawn, want 1", width, got)
		}
		var cd struct {
			Gaps   [][2]int64 `json:"gaps"`
			Charts []struct {
				ID   string     `json:"id"`
				Mean []*float64 `json:"mean"`
			} `json:"charts"`
		}
		if err := json.Unmarshal([]byte(eval[string](t, ctx, `document.getElementById('chart-data').textContent`)), &cd); err != nil {
			t.Fatal(err)
		}
		if len(cd.Gaps) != 1 {
			t.Fatalf("width %d: gaps %v, want the restart", width, cd.Gaps)
		}
		for _, c := range cd.Charts {
			if c.ID != "hall_motion.illuminance" {
				continue
			}
			// Values before the stop, a null, values after the restart.
			var seq []string
			for _, v := range c.Mean {
				if v == nil {
					seq = append(seq, "null")
				} else {
					seq = append(seq, itoa(int(*v)))
				}
			}
			s := strings.Join(seq, " ")
			if i := strings.Index(s, "null"); i <= 0 || i+len("null") >= len(s) || strings.Count(s, "null") != 1 {
				t.Errorf("width %d: illuminance %s, want values, one gap, values", width, s)
			}
		}
		if !eval[bool](t, ctx, `document.querySelector('.rangeform input[name=from]').value !== ''`) {
			t.Errorf("width %d: no custom range form", width)
		}
	}
	// Zoomed in on the restart (a range link as the zoom links make them).
	gap := eval[[]int64](t, ctx, `JSON.parse(document.getElementById('chart-data').textContent).gaps[0]`)
	shotCharts(t, ctx, shot, base+"/devices/hall_motion?from="+itoa(int(gap[0]-30))+"&to="+itoa(int(gap[1]+30)), "chart-gap-zoomed", 2)
	dragZoom(t, ctx)
	t.Logf("screenshots in %s", shot.dir)
}

// dragZoom drags across the middle of the illuminance chart: the page
// reloads with that range as a custom one.
func dragZoom(t *testing.T, ctx context.Context) {
	t.Helper()
	box := eval[[]float64](t, ctx, `(() => { const o = document.querySelector('figure[data-chart="hall_motion.illuminance"] .u-over');
		o.scrollIntoView({block: "center"}); const r = o.getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; })()`)
	x1, x2, y := box[0]+box[2]*0.2, box[0]+box[2]*0.8, box[1]+box[3]/2
	before := eval[string](t, ctx, `location.href`)
	do(t, ctx, "drag across a chart",
		chromedp.MouseEvent(chromedp.MousePressed, x1, y, chromedp.ButtonLeft, chromedp.ClickCount(1)),
		chromedp.MouseEvent(chromedp.MouseMoved, (x1+x2)/2, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseMoved, x2, y, chromedp.ButtonLeft),
		chromedp.MouseEvent(chromedp.MouseReleased, x2, y, chromedp.ButtonLeft, chromedp.ClickCount(1)))
	waitJS(t, ctx, "the zoomed page", `location.href !== `+strconvQuote(before)+` && location.search.includes('from=') && document.readyState === 'complete' && document.body && document.body.getAttribute('data-charts')`)
	if !eval[bool](t, ctx, `document.querySelector('.rangeform .sub').textContent.includes('Custom range')`) {
		t.Errorf("after a drag: not a custom range: %s", eval[string](t, ctx, `location.href`))
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
