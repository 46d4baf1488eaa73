package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

func TestDevicePageHistoryAndRanges(t *testing.T) {
	f := newFixture(t, nil)
	for _, on := range []bool{true, false, true} {
		f.motion(on)
	}
	f.e.FlushHistory()
	c := f.client()
	code, body, _ := c.get("/devices/hall_motion")
	if code != 200 {
		t.Fatalf("device page: %d", code)
	}
	mustContain(t, "device page", body,
		`<script type="application/json" id="chart-data">`, `"id":"hall_motion.occupancy"`, `"kind":"band"`,
		`"id":"hall_motion.illuminance"`, `"kind":"line"`, `"unit":"lx"`,
		`data-chart="hall_motion.occupancy"`, `4 changes, false 2×, true 2×`, // in words; the value at the start counts
		`href="/devices/hall_motion?range=7d"`, "Fitted to the recorded data", // a fresh install's minutes fill the chart
		`/static/vendor/uplot/uPlot.iife.min.js`, `/static/charts.js`)
	_, body, _ = c.get("/devices/hall_motion?range=1h")
	mustContain(t, "1h", body, `href="/devices/hall_motion?range=1h" aria-current="page"`)
	_, body, _ = c.get("/devices/hall_motion?range=forever")
	mustContain(t, "unknown range", body, `Unknown range &#34;forever&#34;: showing the default.`, "Fitted to the recorded data")
	if code, _, _ := c.get("/devices/nope"); code != 404 {
		t.Fatalf("unknown device: %d", code)
	}
	// A name that is no device: its entries by id (the notifier).
	_, body, _ = c.get("/devices/notify")
	mustContain(t, "notify page", body, `id="ctl-notify.phone"`, `name="arg.message"`, "(required)")
	// Static assets: uPlot and its licence are served.
	for _, p := range []string{"/static/vendor/uplot/uPlot.iife.min.js", "/static/vendor/uplot/LICENSE", "/static/charts.js"} {
		if code, _, _ := c.get(p); code != 200 {
			t.Errorf("%s: %d", p, code)
		}
	}
}

func TestControlRunsAsThePrincipal(t *testing.T) {
	f := newFixture(t, testPrincipals())
	c := f.client()
	c.login(ownerTok)
	code, body, _ := c.get("/devices/hall_light")
	if code != 200 {
		t.Fatalf("device page: %d", code)
	}
	mustContain(t, "controls", body, `id="ctl-hall_light.set"`, `name="arg.state" value="ON"`, `name="arg.state" value="TOGGLE"`,
		`type="range" id="f-hall-light-set-brightness" name="arg.brightness" min="0" max="254" step="1"`)
	tok := c.csrf("/devices/hall_light")
	post := func(dev string, form url.Values) (int, string, http.Header) {
		form.Set("csrf", tok)
		return c.post("/devices/"+dev+"/control", form)
	}
	if code, _, _ := c.post("/devices/hall_light/control", url.Values{"action": {"hall_light.set"}, "arg.state": {"ON"}}); code != http.StatusForbidden {
		t.Fatalf("control without csrf: %d", code)
	}
	code, _, h := post("hall_light", url.Values{"action": {"hall_light.set"}, "arg.state": {"ON"}, "arg.brightness": {"120"}, "range": {"7d"}})
	if code != http.StatusSeeOther || h.Get("Location") != "/devices/hall_light?range=7d" {
		t.Fatalf("control: %d %v", code, h)
	}
	_, body, _ = c.get("/devices/hall_light")
	mustContain(t, "after control", body, `hall_light.set {&#34;brightness&#34;:120,&#34;state&#34;:&#34;ON&#34;}: success.`, `View the run</a>`, `id="recent-controls"`)
	runs, _ := f.store.ListRuns(context.Background(), storage.RunFilter{Kind: storage.KindManual})
	if len(runs) != 1 || runs[0].Principal != "owner" || !runs[0].OK {
		t.Fatalf("manual runs: %+v", runs)
	}
	mustContain(t, "after control", body, `href="/runs/`+runs[0].ID+`"`)

	// Bad input is refused before anything runs; another device's action
	// is not this page's.
	_, _, h = post("hall_light", url.Values{"action": {"hall_light.set"}, "arg.brightness": {"bright"}})
	_, body, _ = c.get(h.Get("Location"))
	mustContain(t, "bad argument", body, "Not sent: brightness: &#34;bright&#34; is not a number")
	if code, _, _ := post("hall_light", url.Values{"action": {"front_lock.set"}, "arg.state": {"UNLOCK"}}); code != 404 {
		t.Fatalf("another device's action: %d", code)
	}
	_, _, h = post("hall_light", url.Values{"action": {"hall_light.set"}, "arg.brightness": {"999"}})
	_, body, _ = c.get(h.Get("Location"))
	mustContain(t, "out of range", body, "validation error")
}

func TestSecurityControlNeedsConfirmation(t *testing.T) {
	f := newFixture(t, testPrincipals())
	c := f.client()
	c.login(ownerTok)
	tok := c.csrf("/devices/front_lock")
	form := url.Values{"csrf": {tok}, "action": {"front_lock.set"}, "arg.state": {"UNLOCK"}, "key": {"k1"}}
	code, body, _ := c.post("/devices/front_lock/control", form)
	if code != 200 {
		t.Fatalf("unconfirmed: %d", code)
	}
	mustContain(t, "confirmation page", body, "It is a security action", `name="confirm" value="security"`,
		`name="arg.state" value="UNLOCK"`, `name="key" value="k1"`, `id="confirm-cancel"`)
	// A confirmation of a lesser risk is no confirmation.
	form.Set("confirm", "control")
	if code, body, _ := c.post("/devices/front_lock/control", form); code != 200 || !strings.Contains(body, `id="confirm-run"`) {
		t.Fatalf("confirmed as control: %d", code)
	}
	if runs, _ := f.store.ListRuns(context.Background(), storage.RunFilter{Kind: storage.KindManual}); len(runs) != 0 {
		t.Fatalf("an unconfirmed control ran: %+v", runs)
	}
	form.Set("confirm", "security")
	code, _, h := c.post("/devices/front_lock/control", form)
	if code != http.StatusSeeOther {
		t.Fatalf("confirmed: %d", code)
	}
	_, body, _ = c.get(h.Get("Location"))
	mustContain(t, "after confirming", body, `front_lock.set {&#34;state&#34;:&#34;UNLOCK&#34;}: success.`)
	// The same form again (a double submit) replays the first run.
	c.post("/devices/front_lock/control", form)
	if runs, _ := f.store.ListRuns(context.Background(), storage.RunFilter{Kind: storage.KindManual}); len(runs) != 1 {
		t.Fatalf("a double submit ran %d times", len(runs))
	}
}

func TestGuestLooksButDoesNotAct(t *testing.T) {
	f := newFixture(t, testPrincipals())
	c := f.client()
	c.login(guestTok)
	_, body, _ := c.get("/devices/hall_light")
	mustContain(t, "guest device page", body, `id="no-act"`, "hall_light.set")
	mustNotContain(t, "guest device page", body, `class="ctl"`)
	if code, _, _ := c.get("/devices/front_lock"); code != 404 {
		t.Fatalf("guest sees the lock: %d", code)
	}
	// Posting anyway: the engine refuses (deploy is needed to act).
	tok := c.csrf("/devices/hall_light")
	_, _, h := c.post("/devices/hall_light/control", url.Values{"csrf": {tok}, "action": {"hall_light.set"}, "arg.state": {"ON"}})
	_, body, _ = c.get(h.Get("Location"))
	mustContain(t, "guest control", body, "denied", "may not act on the house")
	if code, _, _ := c.post("/devices/front_lock/control", url.Values{"csrf": {tok}, "action": {"front_lock.set"}, "arg.state": {"UNLOCK"}}); code != 404 {
		t.Fatalf("guest controls the lock: %d", code)
	}
}

func TestFindDevices(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	_, body, _ := c.get("/devices?q=motion")
	mustContain(t, "find motion", body, `href="/devices/hall_motion"`, "1 of 4 devices match")
	mustNotContain(t, "find motion", body, `href="/devices/hall_light"`)
	// Words may fall on the device and on one of its entries.
	_, body, _ = c.get("/devices?q=hall+illuminance")
	mustContain(t, "hall illuminance", body, `data-live="hall_motion.illuminance"`)
	mustNotContain(t, "hall illuminance", body, `data-live="hall_motion.occupancy"`, `href="/devices/hall_light"`)
	_, body, _ = c.get("/devices?kind=action")
	mustContain(t, "actions", body, `href="/devices/hall_light"`, `href="/devices/notify"`, "hall_light.set")
	mustNotContain(t, "actions", body, `href="/devices/hall_motion"`, `data-live="hall_`)
	_, body, _ = c.get("/devices?type=lock")
	mustContain(t, "locks", body, `href="/devices/front_lock"`)
	mustNotContain(t, "locks", body, `href="/devices/hall_light"`)
	_, body, _ = c.get("/devices?q=zebra")
	mustContain(t, "nothing", body, "No device matches.")
}

func TestFindGroupsByArea(t *testing.T) {
	mk := func(id, area, typ string) *deviceView {
		dv := &deviceView{Area: area, Type: typ}
		dv.Entry = newEntry(id)
		return dv
	}
	list := []*deviceView{mk("b_lamp", "bedroom", "light"), mk("k_lamp", "kitchen", "light"), mk("plug", "", "switch"), mk("a_lamp", "bedroom", "light")}
	f := findDevices(list, url.Values{})
	if len(f.Groups) != 3 || f.Groups[0].Area != "bedroom" || len(f.Groups[0].Devices) != 2 || f.Groups[2].Area != "" ||
		strings.Join(f.Areas, ",") != "bedroom,kitchen" || strings.Join(f.Types, ",") != "light,switch" {
		t.Fatalf("groups: %+v", f)
	}
	if f := findDevices(list, url.Values{"area": {"-"}}); f.Shown != 1 || f.Groups[0].Devices[0].Entry.ID != "plug" {
		t.Fatalf("no area: %+v", f)
	}
	if f := findDevices(list, url.Values{"area": {"kitchen"}, "type": {"light"}}); f.Shown != 1 {
		t.Fatalf("kitchen lights: %+v", f)
	}
}

func TestRuleTimelineOverlaysFirings(t *testing.T) {
	f := newFixture(t, nil)
	runs := f.darkOnlyFired()
	f.e.FlushHistory()
	_, body, _ := f.client().get("/rules/dark-only")
	mustContain(t, "rule timeline", body, `id="tl-h"`, `data-chart="firings"`, `1 firings: 1 conditions not met`,
		`"firings":[{"t":`, `"run":"`+runs[0].ID+`"`, `"class":"st-idle"`,
		`data-chart="hall_motion.occupancy"`, `data-chart="hall_motion.illuminance"`, `href="/rules/dark-only?range=7d"`)
}

func newEntry(id string) *pilotage.Entry {
	return &pilotage.Entry{ID: id, Name: id, Kind: pilotage.KindDevice}
}

func TestRunsListManualRuns(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	tok := c.csrf("/devices/hall_light")
	c.post("/devices/hall_light/control", url.Values{"csrf": {tok}, "action": {"hall_light.set"}, "arg.state": {"OFF"}})
	_, body, _ := c.get("/runs?kind=manual")
	mustContain(t, "manual runs", body, `<option value="manual" selected>`, `<span class="mono">hall_light.set</span> <span class="sub">by hand</span>`)
	mustNotContain(t, "manual runs", body, `href="/rules/control.`)
}

// TestUnstoredRefusalHasNoLink: a refused control past the principal's
// bound of stored refusals is not stored, so its message links to no run
// (it linked to a 404).
func TestUnstoredRefusalHasNoLink(t *testing.T) {
	f := newFixture(t, testPrincipals())
	c := f.client()
	c.login(guestTok)
	tok := c.csrf("/devices/hall_light")
	var body string
	for i := range 60 {
		_, _, h := c.post("/devices/hall_light/control", url.Values{"csrf": {tok}, "action": {"hall_light.set"}, "arg.state": {"ON"}})
		_, body, _ = c.get(h.Get("Location"))
		if i == 0 {
			mustContain(t, "first refusal", body, `View the run</a>`)
		}
	}
	mustContain(t, "60th refusal", body, "The run was not stored.")
	if strings.Contains(body, `View the run</a>`) {
		t.Errorf("the 60th refusal links to a run that was not stored")
	}
}

// TestBandSummarySaysPartialCounts: counts per value that cover only the
// range's latest changes say so.
func TestBandSummarySaysPartialCounts(t *testing.T) {
	for _, tc := range []struct {
		h    engine.EntityHistory
		want string
	}{
		{engine.EntityHistory{Count: 3, Counts: map[string]int{`"a"`: 2, `"b"`: 1}}, `3 changes, a 2×, b 1×`},
		{engine.EntityHistory{Count: 12000, CountsOf: 10000, Counts: map[string]int{`"a"`: 6000}}, `12000 changes; of the latest 10000, a 6000×`},
	} {
		var c chartSpec
		bandChart(&c, &tc.h)
		if c.Summary != tc.want {
			t.Errorf("summary %q, want %q", c.Summary, tc.want)
		}
	}
}

// TestGatedLoginCannotConfirmItsOwnSecurityControl: a principal whose
// risky actions need a person's approval (an assistant, logged in to the
// web UI with its own token) is refused a security control even when it
// confirms it: its confirmation is no person's. Nothing is published.
func TestGatedLoginCannotConfirmItsOwnSecurityControl(t *testing.T) {
	kid := &engine.Principal{Name: "kid", TokenHash: engine.HashToken(kidTok), Deploy: true, Approval: &engine.ApprovalPolicy{}}
	f := newFixture(t, append(testPrincipals(), kid))
	c := f.client()
	c.login(kidTok)
	form := url.Values{"csrf": {c.csrf("/devices/front_lock")}, "action": {"front_lock.set"}, "arg.state": {"UNLOCK"}, "confirm": {"security"}}
	_, _, h := c.post("/devices/front_lock/control", form)
	_, body, _ := c.get(h.Get("Location"))
	mustContain(t, "the kid's confirmed unlock", body, "denied", "may not send this by hand", "destructive: front_lock.set")
	runs, _ := f.store.ListRuns(context.Background(), storage.RunFilter{Kind: storage.KindManual})
	for _, r := range runs {
		if r.OK {
			t.Fatalf("the kid's unlock ran: %+v", r)
		}
	}
	// A control its policy does not gate is its to send.
	form = url.Values{"csrf": {c.csrf("/devices/hall_light")}, "action": {"hall_light.set"}, "arg.state": {"ON"}}
	_, _, h = c.post("/devices/hall_light/control", form)
	_, body, _ = c.get(h.Get("Location"))
	mustContain(t, "the kid's light", body, "success")
}
