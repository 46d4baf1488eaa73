package main

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestWebOfflineDeviceStaysStale: in the browser, a device page open
// while the device goes offline marks its values stale and says since
// when; a value the device sends meanwhile does not replace them (rules
// read none of it); once it is back online its values update again.
func TestWebOfflineDeviceStaysStale(t *testing.T) {
	a := startTestApp(t, testConfig(t))
	avail := func(state string) {
		t.Helper()
		if err := a.client.Publish(context.Background(), "zigbee2mqtt/hall_motion/availability", []byte(`{"state":"`+state+`"}`), 1, true); err != nil {
			t.Fatal(err)
		}
	}
	lux := func(v float64) {
		t.Helper()
		if err := a.sim.Trigger(context.Background(), "hall_motion", map[string]any{"illuminance": v}); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "the illuminance", func() bool {
			l, ok := a.devs.Live("hall_motion.illuminance")
			return ok && l.Value == v
		})
	}
	avail("online")
	lux(26)
	ctx := browser(t)
	failOnJSErrors(t, ctx)
	do(t, ctx, "device page", chromedp.Navigate(a.URL()+"/devices/hall_motion"), chromedp.WaitVisible(chromedp.CSS(`[data-live="hall_motion.illuminance"]`)))
	waitLive(t, ctx)
	cell := `document.querySelector('td[data-live="hall_motion.illuminance"]')`
	waitJS(t, ctx, "the value", cell+`.textContent === '26'`)

	avail("offline")
	waitJS(t, ctx, "the stale note", `!document.getElementById('stale-note').hidden && document.getElementById('stale-note').textContent.indexOf('Offline since ') === 0 && `+cell+`.hasAttribute('data-stale')`)
	lux(99)
	avail("online") // comes after the 99 on the same stream: once the badge says online, the 99 was seen
	waitJS(t, ctx, "back online", `document.querySelector('[data-avail="hall_motion"]').textContent === 'online' && document.getElementById('stale-note').hidden`)
	if got := eval[string](t, ctx, cell+`.textContent`); got != "26" {
		t.Errorf("the value sent while offline replaced the stale one: %q", got)
	}
	lux(88)
	waitJS(t, ctx, "the value after coming back", cell+`.textContent === '88' && !`+cell+`.hasAttribute('data-stale')`)
}

// TestWebRunsListSaysWho: with logins, the Runs page open in the browser
// gets a live firing's row with whom it ran as in its By column.
func TestWebRunsListSaysWho(t *testing.T) {
	tok := "owner-who-token"
	cfg := testConfig(t)
	cfg.Principals = []*engine.Principal{{Name: "owner", TokenHash: engine.HashToken(tok), Deploy: true}}
	a := startTestApp(t, cfg)
	owner := engine.WithPrincipal(context.Background(), cfg.Principals[0])
	if resp, err := a.eng.Execute(owner, engine.ExecuteRequest{Program: json.RawMessage(`{"name": "motion-on",
	  "triggers": [{"id": "motion", "state": "hall_motion.occupancy", "to": true}],
	  "steps": [{"id": "on", "call": "hall_light.set", "args": {"state": "ON"}}]}`)}); err != nil || !resp.Outcome.OK {
		t.Fatalf("deploy: %v %+v", err, resp)
	}
	ctx := browser(t)
	failOnJSErrors(t, ctx)
	do(t, ctx, "login page", chromedp.Navigate(a.URL()+"/runs"), chromedp.WaitVisible(chromedp.CSS("#token")))
	login(t, ctx, tok)
	do(t, ctx, "runs page", chromedp.Navigate(a.URL()+"/runs"), chromedp.WaitVisible(chromedp.CSS("#runs")))
	waitLive(t, ctx)
	if err := a.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": false}); err != nil {
		t.Fatal(err)
	}
	if err := a.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": true}); err != nil {
		t.Fatal(err)
	}
	waitJS(t, ctx, "the live firing's row", `Array.from(document.querySelectorAll('#runs tbody tr')).some(function (tr) {
		var by = tr.querySelector('td[data-label="By"]'), kind = tr.querySelector('td[data-label="Kind"]');
		return kind && kind.textContent === 'firing' && by && by.textContent === 'owner' && tr.cells.length === 6;
	})`)
}
