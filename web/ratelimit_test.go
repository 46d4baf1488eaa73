package web

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/ratelimit"
)

// TestLoginRateLimit: ten wrong tokens from one address, and the eleventh
// attempt is refused (429 with Retry-After) even with the right token.
func TestLoginRateLimit(t *testing.T) {
	f := newFixture(t, testPrincipals())
	c := f.client()
	for i := range ratelimit.MaxFailures {
		if code, _, _ := c.post("/login", url.Values{"token": {fmt.Sprintf("wrong-%d", i)}}); code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, code)
		}
	}
	code, body, h := c.post("/login", url.Values{"token": {ownerTok}})
	if code != http.StatusTooManyRequests || h.Get("Retry-After") == "" {
		t.Fatalf("after %d failures: %d, Retry-After %q", ratelimit.MaxFailures, code, h.Get("Retry-After"))
	}
	mustContain(t, "refusal", body, "Too many failed logins")
}

// TestRightTokenKeepsCount: a known guest token, tried between wrong
// guesses, must not reset the count at either door (the login form and the
// bearer-token API); only the server's own unguessable token passes then.
func TestRightTokenKeepsCount(t *testing.T) {
	const localTok = "local-unguessable"
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
			ps := append(testPrincipals(), &engine.Principal{Name: "local", TokenHash: engine.HashToken(localTok), Unguessable: true, Deploy: true})
			c := newFixture(t, ps).client()
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
			if code := d.try(c, ownerTok); code != http.StatusTooManyRequests {
				t.Fatalf("owner token after %d wrong ones between right ones: %d, want 429", ratelimit.MaxFailures, code)
			}
			if code := d.try(c, localTok); code != d.right {
				t.Fatalf("local token at a throttled address: %d, want %d", code, d.right)
			}
		})
	}
}
