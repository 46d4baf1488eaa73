package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
)

// Render budget of a week's chart: a sensor reporting every 10 s for 7
// days (60,480 changes) renders in under renderBudget on the server, and
// the page with everything it loads stays under pageBudget on the wire.
const pageBudget = 200 << 10

// sensorWeek builds the device page of hall_motion with a week of its
// illuminance every 10 s, and its occupancy changing every few minutes.
func sensorWeek(tb testing.TB) (http.Handler, *http.Cookie) {
	tb.Helper()
	ctx := context.Background()
	store, err := storage.Open(ctx, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = store.Close() })
	devs := devices.NewCatalog(devices.Options{Logger: quiet()})
	devs.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bridge/devices", Payload: []byte(bridge)})
	now := time.Now()
	var pts []storage.HistoryPoint
	for i := range 7 * 24 * 360 {
		t := now.Add(-7 * 24 * time.Hour).Add(time.Duration(i) * 10 * time.Second)
		pts = append(pts, storage.HistoryPoint{Entity: "hall_motion.illuminance", T: t, IsNum: true, Num: float64(i % 500)})
		if i%30 == 0 {
			pts = append(pts, storage.HistoryPoint{Entity: "hall_motion.occupancy", T: t, JSON: map[bool]string{true: "true", false: "false"}[i%60 == 0]})
		}
		if len(pts) >= 5000 {
			if _, err := store.WriteHistory(ctx, pts, storage.HistoryWrite{}); err != nil {
				tb.Fatal(err)
			}
			pts = pts[:0]
		}
	}
	if _, err := store.WriteHistory(ctx, pts, storage.HistoryWrite{}); err != nil {
		tb.Fatal(err)
	}
	// The clock stops at the week's end: on a loaded machine building the
	// week takes long enough for its first point to leave a live 7-day window.
	e := engine.New(engine.Config{Now: func() time.Time { return now }}, devs, store, quiet())
	if err := e.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(e.Close)
	h := Handler(e, Options{Logger: quiet()})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/devices", nil))
	return h, rec.Result().Cookies()[0]
}

// fetch GETs path as a browser would (gzip accepted) and returns the time
// the handler took, the bytes on the wire and the decoded body.
func fetch(tb testing.TB, h http.Handler, c *http.Cookie, path string) (time.Duration, int, string) {
	tb.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil)
	req.AddCookie(c)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	t0 := time.Now()
	h.ServeHTTP(rec, req)
	d := time.Since(t0)
	if rec.Code != 200 {
		tb.Fatalf("GET %s: %d", path, rec.Code)
	}
	wire := rec.Body.Len()
	body := rec.Body.Bytes()
	if rec.Header().Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			tb.Fatal(err)
		}
		body, _ = io.ReadAll(zr)
	}
	return d, wire, string(body)
}

func TestHistoryRenderBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a week of a 10-second sensor")
	}
	h, c := sensorWeek(t)
	for _, rng := range []string{"7d", "24h", "1h"} {
		page := "/devices/hall_motion?range=" + rng
		var ds []time.Duration
		var wire int
		var body string
		for range 9 {
			d, n, b := fetch(t, h, c, page)
			ds, wire, body = append(ds, d), n, b
		}
		slices.Sort(ds)
		med := ds[len(ds)/2]
		if !strings.Contains(body, `"id":"hall_motion.illuminance"`) || (rng == "7d" && !strings.Contains(body, "60480 changes")) {
			t.Fatalf("%s: the chart is not on the page", page)
		}
		total := wire + assetBytes(t, h, c, body)
		t.Logf("%-32s median %8v (max %8v), page %6d bytes on the wire (%6d decoded), %6d with its assets",
			page, med.Round(10*time.Microsecond), ds[len(ds)-1].Round(10*time.Microsecond), wire, len(body), total)
		if raceEnabled {
			continue // timings are meaningless under the race detector
		}
		if med > renderBudget {
			t.Errorf("%s: median render %v over the %v budget", page, med, renderBudget)
		}
		if total > pageBudget {
			t.Errorf("%s: page with assets %d bytes, over the %d budget", page, total, pageBudget)
		}
	}
}

// assetBytes is what the page's stylesheets and scripts weigh on the wire.
func assetBytes(t *testing.T, h http.Handler, c *http.Cookie, body string) int {
	t.Helper()
	total := 0
	for _, asset := range []string{"/static/app.css", "/static/app.js", "/static/charts.js", "/static/vendor/uplot/uPlot.min.css", "/static/vendor/uplot/uPlot.iife.min.js"} {
		if !strings.Contains(body, asset) {
			t.Fatalf("page does not load %s", asset)
		}
		_, n, _ := fetch(t, h, c, asset)
		total += n
	}
	return total
}
