package web

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

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
