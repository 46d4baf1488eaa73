package web

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/pilothouse/pilothouse/internal/ratelimit"
)

// TestLoginRateLimit: after ten wrong tokens from one address the next
// wrong one is refused (429 with Retry-After), while the owner's right
// token still logs in from that address: the attacker's address is
// locked out, never the owner.
func TestLoginRateLimit(t *testing.T) {
	f := newFixture(t, testPrincipals())
	c := f.client()
	for i := range ratelimit.MaxFailures {
		if code, _, _ := c.post("/login", url.Values{"token": {fmt.Sprintf("wrong-%d", i)}}); code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, code)
		}
	}
	code, body, h := c.post("/login", url.Values{"token": {"wrong-again"}})
	if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("after %d failures: %d, Retry-After %q", ratelimit.MaxFailures, code, h.Get("Retry-After"))
	}
	mustContain(t, "refusal", body, "Too many failed logins")
	if code, _, h := c.post("/login", url.Values{"token": {ownerTok}}); code != http.StatusSeeOther {
		t.Fatalf("the owner's token from the throttled address: %d %v, want logged in", code, h)
	}
	if code, _, _ := c.post("/login", url.Values{"token": {"wrong-after"}}); code != http.StatusTooManyRequests {
		t.Fatalf("a wrong token after the owner's login: %d, want 429 (a success forgets nothing)", code)
	}
}

// TestRightTokenKeepsCount: a known guest token, tried between wrong
// guesses, must not reset the count at either door (the login form and the
// bearer-token API); once the address is throttled, wrong tokens wait and
// every right one still passes.
func TestRightTokenKeepsCount(t *testing.T) {
	type door func(c *client, tok string) int
	login := func(c *client, tok string) int {
		code, _, _ := c.post("/login", url.Values{"token": {tok}})
		return code
	}
	api := func(c *client, tok string) int {
		req, _ := http.NewRequest(http.MethodGet, c.base+"/api/approvals", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		code, _, _ := c.do(req)
		return code
	}
	for _, d := range []struct {
		name  string
		try   door
		right int
	}{{"login", login, http.StatusSeeOther}, {"api", api, http.StatusOK}} {
		t.Run(d.name, func(t *testing.T) {
			c := newFixture(t, testPrincipals()).client()
			for i := range ratelimit.MaxFailures {
				if code := d.try(c, fmt.Sprintf("wrong-%d", i)); code != http.StatusUnauthorized {
					t.Fatalf("wrong token %d: %d", i+1, code)
				}
				if i < ratelimit.MaxFailures-1 {
					if code := d.try(c, guestTok); code != d.right {
						t.Fatalf("guest token after %d wrong ones: %d, want %d", i+1, code, d.right)
					}
				}
			}
			if code := d.try(c, "wrong-again"); code != http.StatusTooManyRequests {
				t.Fatalf("wrong token after %d wrong ones between right ones: %d, want 429", ratelimit.MaxFailures, code)
			}
			for _, tok := range []string{ownerTok, guestTok} {
				if code := d.try(c, tok); code != d.right {
					t.Fatalf("right token at a throttled address: %d, want %d", code, d.right)
				}
			}
		})
	}
}
