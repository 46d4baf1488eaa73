package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/storage"
)

// seedHistory writes a week of plausible history: the outdoor temperature
// every 10 minutes, the hall's motion at breakfast and in the evening,
// its illuminance following the sun, the hall light's state.
func seedHistory(t *testing.T, store *storage.Store, now time.Time) {
	t.Helper()
	var pts []storage.HistoryPoint
	start := now.Add(-7 * 24 * time.Hour).Truncate(time.Hour)
	for ts := start; ts.Before(now.Add(-time.Minute)); ts = ts.Add(10 * time.Minute) {
		h := float64(ts.Hour()) + float64(ts.Minute())/60
		day := math.Sin((h - 9) / 24 * 2 * math.Pi)
		pts = append(pts, storage.HistoryPoint{Entity: "outdoor_weather.temperature", T: ts, IsNum: true, Num: math.Round((7+6*day+float64(ts.YearDay()%3))*10) / 10},
			storage.HistoryPoint{Entity: "hall_motion.illuminance", T: ts, IsNum: true, Num: math.Max(0, math.Round(400*day))})
		if m := ts.Minute(); (ts.Hour() == 7 || ts.Hour() == 19 || ts.Hour() == 22) && (m == 0 || m == 30) {
			pts = append(pts, storage.HistoryPoint{Entity: "hall_motion.occupancy", T: ts, JSON: "true"},
				storage.HistoryPoint{Entity: "hall_motion.occupancy", T: ts.Add(4 * time.Minute), JSON: "false"},
				storage.HistoryPoint{Entity: "hall_light.state", T: ts.Add(10 * time.Second), JSON: `"ON"`},
				storage.HistoryPoint{Entity: "hall_light.state", T: ts.Add(9 * time.Minute), JSON: `"OFF"`})
		}
	}
	if _, err := store.WriteHistory(context.Background(), pts, storage.HistoryWrite{}); err != nil {
		t.Fatal(err)
	}
}

// seedFirings stores past firings of rule in each outcome, for its
// timeline.
func seedFirings(t *testing.T, store *storage.Store, rule, principal string, now time.Time) {
	t.Helper()
	var runs []storage.Run
	statuses := []struct {
		s  string
		ok bool
	}{{"success", true}, {"conditions_not_met", true}, {"conditions_not_met", true}, {"failed", false}, {"skipped", true}}
	for i := range 20 {
		st := statuses[i%len(statuses)]
		id := storage.NewRunID()
		started := now.Add(-time.Duration(23-i) * time.Hour).Add(-7 * time.Minute)
		runs = append(runs, storage.Run{ID: id, Principal: principal, Rule: rule, Kind: storage.KindFiring, Status: st.s, OK: st.ok,
			Started: started, Ended: started, Level: "full", Expires: now.Add(24 * time.Hour),
			Envelope: []byte(`{"run_id":"` + id + `","outcome":{"ok":` + map[bool]string{true: "true", false: "false"}[st.ok] + `,"status":"` + st.s + `"},"trace":{"level":"full","steps":[]}}`)})
	}
	if err := store.InsertRuns(context.Background(), runs); err != nil {
		t.Fatal(err)
	}
}

const darkMotion = `{
  "name": "dark-motion-light",
  "description": "Hall light on at motion, when it is dark",
  "triggers": [{"id": "motion", "state": "hall_motion.occupancy", "to": true}],
  "conditions": [{"id": "dark", "expr": "state('hall_motion.illuminance') < 50"}],
  "steps": [{"id": "on", "call": "hall_light.set", "args": {"state": "ON", "brightness": 200}}]
}`

// TestWebHistoryAndControl drives the device page, find, the rule
// timeline and device control with its confirmation in a real browser.
func TestWebHistoryAndControl(t *testing.T) {
	ownerTok, guestTok := "owner-hist-token", "guest-hist-token"
	cfg := testConfig(t)
	cfg.Principals = []*engine.Principal{
		{Name: "owner", TokenHash: engine.HashToken(ownerTok), Deploy: true},
		{Name: "guest", TokenHash: engine.HashToken(guestTok), Scope: engine.Scope{DenyTypes: []string{"lock", "cover"}, DenyDevices: []string{"notify"}}},
	}
	cfg.StdioAs = "owner"
	cfg.TimeZone = "Europe/Paris"
	cfg.Notify = []devices.NotifyChannel{{ID: "notify.phone", Name: "Phone", Topic: "pilothouse/notify/phone"}}
	a := startTestApp(t, cfg)
	now := time.Now()
	seedHistory(t, a.store, now)
	owner := engine.WithPrincipal(context.Background(), cfg.Principals[0])
	if resp, err := a.eng.Execute(owner, engine.ExecuteRequest{Program: json.RawMessage(darkMotion)}); err != nil || !resp.Outcome.OK {
		t.Fatalf("deploy: %v %+v", err, resp)
	}
	seedFirings(t, a.store, "dark-motion-light", "owner", now)
	base := a.URL()
	ctx := browser(t)
	failOnJSErrors(t, ctx)
	shot := newShots(t)
	do(t, ctx, "login page", chromedp.Navigate(base+"/devices"), chromedp.WaitVisible(chromedp.CSS("#token")))
	login(t, ctx, ownerTok)

	findDevicesInBrowser(t, ctx, a, base, shot)
	deviceCharts(t, ctx, base, shot)
	controlLight(t, ctx, a, base, shot)
	confirmLock(t, ctx, a, base, shot)
	confirmNotify(t, ctx, base)
	ruleTimeline(t, ctx, a, base, shot)

	// The guest sees the light's history but may not act, and no lock.
	do(t, ctx, "logout", chromedp.Navigate(base+"/devices"), chromedp.Click(chromedp.CSS(`form.who button`)), chromedp.WaitVisible(chromedp.CSS("#token")))
	login(t, ctx, guestTok)
	do(t, ctx, "guest device", chromedp.Navigate(base+"/devices/hall_light"), chromedp.WaitVisible(chromedp.CSS("#no-act")))
	if n := eval[int](t, ctx, `document.querySelectorAll('form.ctl').length`); n != 0 {
		t.Fatalf("guest gets %d control forms", n)
	}
	do(t, ctx, "guest lock", chromedp.Navigate(base+"/devices/front_lock"), chromedp.WaitVisible(chromedp.CSS("main")))
	if txt := eval[string](t, ctx, `document.querySelector('main').innerText`); !strings.Contains(txt, "No device called front_lock") {
		t.Fatalf("guest sees the lock's page: %s", txt)
	}
	t.Logf("screenshots in %s", shot.dir)
}

// failOnJSErrors fails the test on any uncaught exception in the pages,
// and logs what they print to the console (reported when the test ends,
// a failure included).
func failOnJSErrors(t *testing.T, ctx context.Context) {
	var mu sync.Mutex
	var msgs []chromedp.ConsoleMessage
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range chromedp.Console(cctx) {
			if err != nil {
				return
			}
			mu.Lock()
			msgs = append(msgs, m)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		for _, m := range msgs {
			if m.IsException() {
				t.Errorf("javascript exception: %s", m)
			} else {
				t.Logf("console: %s", m)
			}
		}
	})
}

// gardenSensor announces a Home Assistant device in the area Garden.
func gardenSensor(t *testing.T, a *app) {
	t.Helper()
	cfg := `{"dev":{"ids":"g1","name":"Garden Sensor","sa":"Garden","mf":"Acme"},"o":{"name":"x"},"stat_t":"garden/state","cmps":{
	  "t":{"p":"sensor","dev_cla":"temperature","unit_of_meas":"°C","val_tpl":"{{ value_json.temperature }}","uniq_id":"gt1"}}}`
	if err := a.client.Publish(context.Background(), "homeassistant/device/g1/config", []byte(cfg), 1, true); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the garden sensor", func() bool { _, ok := a.devs.Snapshot().Get("garden_sensor"); return ok })
}

func findDevicesInBrowser(t *testing.T, ctx context.Context, a *app, base string, shot *shots) {
	t.Helper()
	gardenSensor(t, a)
	do(t, ctx, "devices", chromedp.Navigate(base+"/devices"), chromedp.WaitVisible(chromedp.CSS(`#q`)))
	// Grouped by area: named areas first, then the demo's helper of no
	// area, then the notification channels.
	if groups := eval[[]string](t, ctx, `[...document.querySelectorAll('section.area > h2')].map(h => h.firstChild.textContent.trim())`); strings.Join(groups, ",") != "bedroom,garage,garden,hall,living,porch,No area,Notification channels" {
		t.Fatalf("area groups: %v", groups)
	}
	shot.take(ctx, "devices")
	// "Garden" (the sensor's suggested_area) and the demo weather
	// station's "garden" are one area.
	// One script sets and submits: the live page may replace the nodes
	// between two separate steps.
	eval[bool](t, ctx, `document.querySelector('#area').value='garden'; document.querySelector('#q').form.requestSubmit(); true`)
	do(t, ctx, "garden only", chromedp.WaitVisible(chromedp.CSS("#found")))
	if names := eval[[]string](t, ctx, `[...document.querySelectorAll('.device h3 a')].map(a => a.textContent)`); len(names) != 2 || !slices.Contains(names, "Garden Sensor") {
		t.Fatalf("area garden: %v", names)
	}
	do(t, ctx, "devices again", chromedp.Navigate(base+"/devices"), chromedp.WaitVisible(chromedp.CSS(`#q`)))
	do(t, ctx, "find motion", chromedp.SendKeys(chromedp.CSS("#q"), "motion"), chromedp.Submit(chromedp.CSS("#q")),
		chromedp.WaitVisible(chromedp.CSS("#found")))
	names := eval[[]string](t, ctx, `[...document.querySelectorAll('.device h3 a')].map(a => a.textContent)`)
	if len(names) != 1 || names[0] != "hall_motion" {
		t.Fatalf("find motion: %v", names)
	}
	shot.take(ctx, "devices-find")
	// The kind filter keeps devices with actions, and only their actions.
	do(t, ctx, "actions only", chromedp.Navigate(base+"/devices?kind=action"), chromedp.WaitVisible(chromedp.CSS("#found")))
	if n := eval[int](t, ctx, `document.querySelectorAll('.device table.kv').length`); n != 0 {
		t.Fatalf("kind=action shows %d state tables", n)
	}
	if !eval[bool](t, ctx, `!!document.querySelector('a[href="/devices/front_lock"]') && !document.querySelector('a[href="/devices/outdoor_weather"]')`) { // the weather station has no actions (Zigbee2MQTT devices have get)
		t.Fatal("kind=action: wrong devices")
	}
}

// shotCharts screenshots a page with charts at desktop and phone widths,
// loading it at each width (as a phone would) and waiting for n charts.
func shotCharts(t *testing.T, ctx context.Context, s *shots, url, name string, n int) {
	t.Helper()
	for _, v := range []struct {
		label string
		w, h  int64
		opts  []chromedp.EmulateViewportOption
	}{{"desktop", 1280, 900, nil}, {"phone", 390, 844, []chromedp.EmulateViewportOption{chromedp.EmulateMobile}}} {
		do(t, ctx, "viewport "+v.label, chromedp.EmulateViewport(v.w, v.h, v.opts...), chromedp.Navigate(url))
		waitCharts(t, ctx, n)
		c, cancel := context.WithTimeout(ctx, 15*time.Second)
		png, err := chromedp.Run(c, chromedp.FullScreenshot(100))
		cancel()
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		if err := os.WriteFile(filepath.Join(s.dir, name+"-"+v.label+".png"), png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	do(t, ctx, "viewport desktop", chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url))
	waitCharts(t, ctx, n)
}

func waitCharts(t *testing.T, ctx context.Context, n int) {
	t.Helper()
	waitJS(t, ctx, "the charts", `Number(document.body.getAttribute('data-charts')) >= `+itoa(n)+
		` && document.querySelectorAll('figure.drawn canvas').length >= `+itoa(n))
}

func deviceCharts(t *testing.T, ctx context.Context, base string, shot *shots) {
	t.Helper()
	do(t, ctx, "weather 7d", chromedp.Navigate(base+"/devices/outdoor_weather?range=7d"), chromedp.WaitVisible(chromedp.CSS(`figure[data-chart="outdoor_weather.temperature"]`)))
	waitCharts(t, ctx, 2)
	if cur := eval[string](t, ctx, `document.querySelector('.ranges [aria-current]').textContent`); cur != "7d" {
		t.Fatalf("range picker: %q", cur)
	}
	if txt := eval[string](t, ctx, `document.querySelector('figure[data-chart="outdoor_weather.temperature"] figcaption').innerText`); !strings.Contains(txt, "°C") || !strings.Contains(txt, "changes") {
		t.Fatalf("temperature caption: %q", txt)
	}
	shotCharts(t, ctx, shot, base+"/devices/outdoor_weather?range=7d", "device-weather-7d", 2)
	do(t, ctx, "motion 24h", chromedp.Navigate(base+"/devices/hall_motion"), chromedp.WaitVisible(chromedp.CSS(`figure[data-chart="hall_motion.occupancy"]`)))
	waitCharts(t, ctx, 3)
	// The band's legend names the values it draws.
	if keys := eval[string](t, ctx, `document.querySelector('figure[data-chart="hall_motion.occupancy"] .keys').textContent`); !strings.Contains(keys, "true") || !strings.Contains(keys, "false") {
		t.Fatalf("occupancy keys: %q", keys)
	}
	shotCharts(t, ctx, shot, base+"/devices/hall_motion", "device-motion-24h", 3)
}

func controlLight(t *testing.T, ctx context.Context, a *app, base string, shot *shots) {
	t.Helper()
	do(t, ctx, "light", chromedp.Navigate(base+"/devices/hall_light"), chromedp.WaitVisible(chromedp.CSS(`[id="ctl-hall_light.set"]`)))
	shotCharts(t, ctx, shot, base+"/devices/hall_light", "device-light", 2)
	do(t, ctx, "ON", chromedp.Click(chromedp.CSS(`[id="ctl-hall_light.set"] button[name="arg.state"][value="ON"]`)),
		chromedp.WaitVisible(chromedp.CSS(".flash a")))
	flash := eval[string](t, ctx, `document.querySelector('.flash').textContent`)
	if !strings.Contains(flash, `hall_light.set {"state":"ON"}: success`) {
		t.Fatalf("flash: %q", flash)
	}
	testutil.Eventually(t, 5*time.Second, "the light on", func() bool { l, _ := a.devs.Live("hall_light.state"); return l.Value == "ON" })
	// The slider: set a brightness, send it.
	eval[bool](t, ctx, `(function(){var r=document.getElementById('f-hall-light-set-brightness'); r.value=42; r.dispatchEvent(new Event('input',{bubbles:true})); return true})()`)
	if out := eval[string](t, ctx, `document.getElementById('f-hall-light-set-brightness-out').textContent`); out != "42" {
		t.Fatalf("slider output: %q", out)
	}
	do(t, ctx, "brightness", chromedp.Click(chromedp.CSS(`#f-hall-light-set-brightness ~ button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#recent-controls")))
	testutil.Eventually(t, 5*time.Second, "brightness 42", func() bool { l, _ := a.devs.Live("hall_light.brightness"); return l.Value == 42.0 })
	// The light can answer before the run's record is stored (the page
	// was already showing #recent-controls): wait for the record.
	var runs []storage.Run
	testutil.Eventually(t, 5*time.Second, "two manual runs", func() bool { runs = manualRuns(t, a); return len(runs) == 2 })
	if runs[0].Principal != "owner" || !runs[0].OK {
		t.Fatalf("manual runs: %+v", runs)
	}
	// Its trace is one click away.
	do(t, ctx, "the run", chromedp.Click(chromedp.CSS(".flash a")), chromedp.WaitVisible(chromedp.CSS("ol.timeline")))
	if txt := eval[string](t, ctx, `document.querySelector('main').innerText`); !strings.Contains(txt, "hall_light.set") || !strings.Contains(txt, "manual run by owner") {
		t.Fatalf("run page: %s", txt)
	}
}

func manualRuns(t *testing.T, a *app) []storage.Run {
	t.Helper()
	runs, err := a.store.ListRuns(context.Background(), storage.RunFilter{Kind: storage.KindManual})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

func confirmLock(t *testing.T, ctx context.Context, a *app, base string, shot *shots) {
	t.Helper()
	before := len(manualRuns(t, a))
	unlock := chromedp.CSS(`[id="ctl-front_lock.set"] button[value="UNLOCK"]`)
	do(t, ctx, "unlock", chromedp.Navigate(base+"/devices/front_lock"), chromedp.Click(unlock), chromedp.WaitVisible(chromedp.CSS("#confirm-run")))
	txt := eval[string](t, ctx, `document.querySelector('main').innerText`)
	if !strings.Contains(txt, "security action") || !strings.Contains(txt, "UNLOCK") {
		t.Fatalf("confirmation page: %s", txt)
	}
	shot.take(ctx, "confirm-unlock")
	do(t, ctx, "cancel", chromedp.Click(chromedp.CSS("#confirm-cancel")), chromedp.WaitVisible(unlock))
	if l, _ := a.devs.Live("front_lock.state"); l.Value != "LOCK" || len(manualRuns(t, a)) != before {
		t.Fatalf("cancel sent something: %v", l.Value)
	}
	do(t, ctx, "unlock, confirmed", chromedp.Click(unlock), chromedp.WaitVisible(chromedp.CSS("#confirm-run")),
		chromedp.Click(chromedp.CSS("#confirm-run")), chromedp.WaitVisible(chromedp.CSS(".flash a")))
	testutil.Eventually(t, 5*time.Second, "the lock open", func() bool { l, _ := a.devs.Live("front_lock.state"); return l.Value == "UNLOCK" })
	shot.take(ctx, "device-lock-after")
}

func confirmNotify(t *testing.T, ctx context.Context, base string) {
	t.Helper()
	do(t, ctx, "notify", chromedp.Navigate(base+"/devices/notify"), chromedp.WaitVisible(chromedp.CSS(`[id="ctl-notify.phone"]`)),
		chromedp.SendKeys(chromedp.CSS(`#f-notify-phone-message`), "Door unlocked"),
		chromedp.Click(chromedp.CSS(`[id="ctl-notify.phone"] button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#confirm-run")))
	if txt := eval[string](t, ctx, `document.querySelector('main').innerText`); !strings.Contains(txt, "leaves the house") || !strings.Contains(txt, "Door unlocked") {
		t.Fatalf("notify confirmation: %s", txt)
	}
	do(t, ctx, "notify, confirmed", chromedp.Click(chromedp.CSS("#confirm-run")), chromedp.WaitVisible(chromedp.CSS(".flash a")))
	if f := eval[string](t, ctx, `document.querySelector('.flash').textContent`); !strings.Contains(f, "notify.phone") || !strings.Contains(f, "success") {
		t.Fatalf("notify flash: %q", f)
	}
}

func ruleTimeline(t *testing.T, ctx context.Context, a *app, base string, shot *shots) {
	t.Helper()
	do(t, ctx, "rule", chromedp.Navigate(base+"/rules/dark-motion-light"), chromedp.WaitVisible(chromedp.CSS(`figure[data-chart="firings"]`)))
	waitCharts(t, ctx, 3) // firings, occupancy, illuminance
	ids := eval[[]string](t, ctx, `[...document.querySelectorAll('figure[data-chart]')].map(f => f.getAttribute('data-chart'))`)
	if strings.Join(ids, ",") != "firings,hall_motion.occupancy,hall_motion.illuminance" {
		t.Fatalf("rule charts: %v", ids)
	}
	if s := eval[string](t, ctx, `document.querySelector('figure[data-chart="firings"] figcaption').innerText`); !strings.Contains(s, "conditions not met") || !strings.Contains(s, "failed") {
		t.Fatalf("firings summary: %q", s)
	}
	shotCharts(t, ctx, shot, base+"/rules/dark-motion-light", "rule-timeline", 3)
	// A click on a firing's mark opens its run.
	fir := firings(t, a, "dark-motion-light")
	js := `(function(){var d=JSON.parse(document.getElementById('chart-data').textContent), f=d.firings[d.firings.length-1],
		o=document.querySelector('figure[data-chart="firings"] .u-over').getBoundingClientRect();
		return [o.left+(f.t-d.from)/(d.to-d.from)*o.width, o.top+o.height/2]})()`
	xy := eval[[]float64](t, ctx, js)
	do(t, ctx, "click a firing", chromedp.MouseEvent("mouseMoved", xy[0], xy[1]), chromedp.MouseClickXY(xy[0], xy[1]),
		chromedp.WaitVisible(chromedp.CSS("ol.timeline, p.sub")))
	if u := eval[string](t, ctx, `location.pathname`); u != "/runs/"+fir[0].ID {
		t.Fatalf("clicked through to %s, want the newest firing %s", u, fir[0].ID)
	}
}
