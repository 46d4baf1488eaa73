package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/storage"
)

// TestReadActionIsOneRefreshButton: a Zigbee2MQTT /get action is one
// labelled "Refresh" button that sends every property at once (was: one
// empty, unlabelled button per property, each refused for sending none).
func TestReadActionIsOneRefreshButton(t *testing.T) {
	f := newFixture(t, testPrincipals())
	c := f.client()
	c.login(ownerTok)
	_, body, _ := c.get("/devices/hall_light")
	i := strings.Index(body, `id="ctl-hall_light.get"`)
	if i < 0 {
		t.Fatal("no hall_light.get control")
	}
	card := body[i:]
	card = card[:strings.Index(card, "</div>")]
	if n := strings.Count(card, "<button"); n != 1 {
		t.Errorf("hall_light.get has %d buttons, want 1:\n%s", n, card)
	}
	mustContain(t, "refresh control", card, `name="refresh" value="1"`, `>Refresh</button>`, "state, brightness")
	mustNotContain(t, "refresh control", card, `value=""></button>`)
	tok := c.csrf("/devices/hall_light")
	code, _, h := c.post("/devices/hall_light/control", url.Values{"csrf": {tok}, "action": {"hall_light.get"}, "refresh": {"1"}, "key": {"r1"}})
	if code != http.StatusSeeOther {
		t.Fatalf("refresh: %d", code)
	}
	_, body, _ = c.get(h.Get("Location"))
	mustContain(t, "after refresh", body, `hall_light.get {&#34;brightness&#34;:&#34;&#34;,&#34;state&#34;:&#34;&#34;}: success.`)
	// A refresh field on an action that is no refresh is refused, not guessed.
	code, _, h = c.post("/devices/hall_light/control", url.Values{"csrf": {tok}, "action": {"hall_light.set"}, "refresh": {"1"}, "key": {"r2"}})
	if code != http.StatusSeeOther {
		t.Fatalf("refresh of a set: %d", code)
	}
	_, body, _ = c.get(h.Get("Location"))
	mustContain(t, "refresh of a set", body, "Not sent: this action does not read the device&#39;s values")
	runs, _ := f.store.ListRuns(context.Background(), storage.RunFilter{Kind: storage.KindManual})
	if len(runs) != 1 || !runs[0].OK {
		t.Fatalf("manual runs: %+v", runs)
	}
}

// TestRiskWording: the risk notes use the right article, and a lock's
// confirmation says how to reverse it (was: "may not be undone from here",
// beside the button that undoes it).
func TestRiskWording(t *testing.T) {
	f := newFixture(t, testPrincipals())
	c := f.client()
	c.login(ownerTok)
	_, body, _ := c.get("/devices/notify")
	mustContain(t, "notify", body, "An external action: you will be asked to confirm.")
	mustNotContain(t, "notify", body, "A external")
	_, body, _ = c.get("/devices/front_lock")
	mustContain(t, "lock", body, "A security action: you will be asked to confirm.")
	tok := c.csrf("/devices/front_lock")
	for _, tc := range []struct{ state, want string }{
		{"UNLOCK", "To reverse it, send state LOCK from this device&#39;s page."},
		{"LOCK", "To reverse it, send state UNLOCK from this device&#39;s page."},
	} {
		code, body, _ := c.post("/devices/front_lock/control", url.Values{"csrf": {tok}, "action": {"front_lock.set"}, "arg.state": {tc.state}})
		if code != 200 {
			t.Fatalf("%s: %d", tc.state, code)
		}
		mustContain(t, tc.state, body, "It is a security action", tc.want)
		mustNotContain(t, tc.state, body, "may not be undone")
	}
}

// TestNotifyIsAChannel: the devices page lists notify under notification
// channels, with no availability badge (was: a device, status "unknown").
func TestNotifyIsAChannel(t *testing.T) {
	f := newFixture(t, nil)
	_, body, _ := f.client().get("/devices")
	mustContain(t, "devices", body, `<h2 id="area-channels">Notification channels`, `<span class="badge st-idle">channel</span>`,
		"notify</span> · notification channel")
	mustNotContain(t, "devices", body, `data-avail="notify"`)
	if i, j := strings.Index(body, `id="dev-hall_light"`), strings.Index(body, `id="area-channels"`); i < 0 || j < i {
		t.Errorf("channels are not after the devices: %d, %d", i, j)
	}
}

func TestFavicon(t *testing.T) {
	f := newFixture(t, nil)
	c := f.client()
	_, body, _ := c.get("/devices")
	mustContain(t, "layout", body, `<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">`)
	code, _, h := c.get("/favicon.ico")
	if code != http.StatusMovedPermanently || h.Get("Location") != "/static/favicon.svg" {
		t.Fatalf("/favicon.ico: %d %v", code, h)
	}
	code, body, h = c.get("/static/favicon.svg")
	if code != 200 || h.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(body, "<svg") {
		t.Fatalf("favicon: %d %q", code, h.Get("Content-Type"))
	}
}
