package web

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestLoginRateLimit: ten wrong tokens from one address, and the eleventh
// attempt is refused (429 with Retry-After) even with the right token.
func TestLoginRateLimit(t *testing.T) {
	f := newFixture(t, testPrincipals())
	c := f.client()
	for i := range loginFailures {
		if code, _, _ := c.post("/login", url.Values{"token": {fmt.Sprintf("wrong-%d", i)}}); code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, code)
		}
	}
	code, body, h := c.post("/login", url.Values{"token": {ownerTok}})
	if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("after %d failures: %d, Retry-After %q", loginFailures, code, h.Get("Retry-After"))
	}
	mustContain(t, "refusal", body, "Too many failed logins")
}

func TestLoginLimitWindow(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	l := newLoginLimit(func() time.Time { return now })
	for range loginFailures - 1 {
		l.fail("10.0.0.7")
	}
	if w := l.wait("10.0.0.7"); w != 0 {
		t.Fatalf("below the limit: wait %v", w)
	}
	l.fail("10.0.0.7")
	if w := l.wait("10.0.0.7"); w != loginWindow {
		t.Fatalf("at the limit: wait %v, want %v", w, loginWindow)
	}
	if w := l.wait("10.0.0.8"); w != 0 {
		t.Fatalf("another address: wait %v", w)
	}
	now = now.Add(loginWindow + time.Second)
	if w := l.wait("10.0.0.7"); w != 0 {
		t.Fatalf("after the window: wait %v", w)
	}
	l.fail("10.0.0.9")
	l.succeed("10.0.0.9")
	if _, ok := l.failures["10.0.0.9"]; ok {
		t.Fatal("a success keeps the failures")
	}
	for i := range loginAddresses + 5 {
		now = now.Add(time.Millisecond)
		l.fail(fmt.Sprintf("10.1.%d.%d", i/256, i%256))
	}
	if len(l.failures) > loginAddresses {
		t.Fatalf("tracking %d addresses, bound %d", len(l.failures), loginAddresses)
	}
	if clientKey("192.0.2.1:5555") != "192.0.2.1" || clientKey("[2001:db8::1]:80") != "2001:db8::1" || clientKey("pipe") != "pipe" {
		t.Fatal("clientKey")
	}
}
