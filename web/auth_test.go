package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

func TestLoginRequired(t *testing.T) {
	f := newFixture(t, testPrincipals())
	c := f.client()
	for _, path := range []string{"/", "/devices", "/runs", "/rules/x", "/runs/run_x"} {
		code, _, h := c.get(path)
		if code != http.StatusSeeOther || !strings.HasPrefix(h.Get("Location"), "/login?next=") {
			t.Errorf("GET %s without login: %d %q", path, code, h.Get("Location"))
		}
	}
	if code, _, _ := c.get("/events"); code != http.StatusUnauthorized {
		t.Errorf("events without login: %d", code)
	}
	if code, _, _ := c.post("/rules/x/disable", url.Values{}); code != http.StatusUnauthorized {
		t.Errorf("POST without login: %d", code)
	}
	if code, _, _ := c.get("/static/app.css"); code != 200 {
		t.Errorf("static assets need no login: %d", code)
	}

	code, body, _ := c.get("/login?next=/devices")
	if code != http.StatusOK {
		t.Fatalf("login page: %d", code)
	}
	mustContain(t, "login page", body, `name="token"`, `type="password"`, `value="/devices"`)
	code, body, _ = c.post("/login", url.Values{"token": {"wrong"}, "next": {"/devices"}})
	if code != http.StatusUnauthorized {
		t.Fatalf("bad token: %d", code)
	}
	mustContain(t, "bad token", body, "That token is not valid.")

	// Open redirects are not followed.
	code, _, h := c.post("/login", url.Values{"token": {ownerTok}, "next": {"//evil.example/"}})
	if code != http.StatusSeeOther || h.Get("Location") != "/" {
		t.Fatalf("login with an off-site next: %d %q", code, h.Get("Location"))
	}
	var sc *http.Cookie
	for _, ck := range (&http.Response{Header: h}).Cookies() {
		if ck.Name == cookieName {
			sc = ck
		}
	}
	if sc == nil || !sc.HttpOnly || sc.SameSite != http.SameSiteStrictMode || len(sc.Value) < 40 {
		t.Fatalf("session cookie: %+v", sc)
	}
	code, body, _ = c.get("/")
	if code != 200 {
		t.Fatalf("after login: %d", code)
	}
	mustContain(t, "logged in", body, "<span>owner</span>", "Log out")

	// Logout needs the CSRF token, then ends the session.
	if code, _, _ := c.post("/logout", url.Values{}); code != http.StatusForbidden {
		t.Fatalf("logout without csrf: %d", code)
	}
	tok := c.csrf("/")
	if code, _, h := c.post("/logout", url.Values{"csrf": {tok}}); code != http.StatusSeeOther || h.Get("Location") != "/login" {
		t.Fatalf("logout: %d %v", code, h)
	}
	if code, _, _ := c.get("/"); code != http.StatusSeeOther {
		t.Fatalf("after logout: %d", code)
	}
}

func TestSessionExpiry(t *testing.T) {
	now := time.Now()
	s := newSessions(time.Hour, func() time.Time { return now })
	ss := s.create(engine.Owner)
	if s.get(ss.id) != ss {
		t.Fatal("fresh session not found")
	}
	now = now.Add(time.Hour)
	if s.get(ss.id) != nil {
		t.Fatal("expired session still valid")
	}
	for range maxSessions + 10 {
		s.create(engine.Owner)
	}
	if n := len(s.byID); n > maxSessions {
		t.Fatalf("sessions unbounded: %d", n)
	}
}

// TestGuestScope: a guest who cannot see locks sees no lock device, no
// rule calling the lock, and cannot act on it by URL.
func TestGuestScope(t *testing.T) {
	ps := testPrincipals()
	f := newFixture(t, ps)
	f.deploy(ps[0], motionRule)
	f.deploy(ps[0], lockRule)

	owner := f.client()
	owner.login(ownerTok)
	_, body, _ := owner.get("/")
	mustContain(t, "owner rules", body, "hall-motion-light", "night-lock")
	_, body, _ = owner.get("/devices")
	mustContain(t, "owner devices", body, "front_lock", "notify.phone")

	guest := f.client()
	guest.login(guestTok)
	_, body, _ = guest.get("/")
	mustContain(t, "guest rules", body, "hall-motion-light", "<span>guest</span>")
	mustNotContain(t, "guest rules", body, "night-lock")
	_, body, _ = guest.get("/devices")
	mustContain(t, "guest devices", body, "hall_light", "hall_motion")
	mustNotContain(t, "guest devices", body, "front_lock", "notify.phone", "risk-security")
	if code, _, _ := guest.get("/rules/night-lock"); code != http.StatusNotFound {
		t.Errorf("guest reads the lock rule: %d", code)
	}
	tok := guest.csrf("/rules/hall-motion-light")
	if code, _, _ := guest.post("/rules/night-lock/disable", url.Values{"csrf": {tok}}); code != http.StatusNotFound {
		t.Errorf("guest disables the lock rule: %d", code)
	}
	// The owner's runs are not the guest's.
	f.motion(true)
	testutil.Eventually(t, 5*time.Second, "a firing", func() bool { return len(f.firings("hall-motion-light")) > 0 })
	id := f.firings("hall-motion-light")[0].ID
	if code, _, _ := guest.get("/runs/" + id); code != http.StatusNotFound {
		t.Errorf("guest reads the owner's run: %d", code)
	}
	_, body, _ = guest.get("/runs")
	mustNotContain(t, "guest runs", body, id)
	_, body, _ = owner.get("/runs")
	mustContain(t, "owner runs", body, id)
}
