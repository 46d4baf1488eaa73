package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/internal/ratelimit"
)

// TestWrongBearerTokensAreLimited: 300 wrong bearer tokens from one address
// in a burst (issue 28's round) are refused after ratelimit.MaxFailures:
// 401 for those, then 429 with Retry-After, so guessing stops; a right
// token (configured, or the house's local one) still gets in from that
// address, on /mcp, the house API and the web login, so a guesser sharing
// the owner's address cannot lock the owner out. Requests without a token
// are not failures; /healthz counts both. The web login shares the
// allowance: it refuses wrong tokens too.
func TestWrongBearerTokensAreLimited(t *testing.T) {
	cfg := testConfig(t)
	twoPrincipals(cfg)
	a := startTestApp(t, cfg)
	post := func(auth string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest("POST", a.URL()+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for range 20 {
		if resp := post(""); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("no token: %d", resp.StatusCode)
		}
	}
	codes := map[int]int{}
	for i := range 300 {
		resp := post(fmt.Sprintf("Bearer guess-%032d", i))
		codes[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	if codes[http.StatusUnauthorized] != ratelimit.MaxFailures || codes[http.StatusTooManyRequests] != 300-ratelimit.MaxFailures {
		t.Fatalf("300 wrong tokens: %v, want %d refused 401 and the rest 429", codes, ratelimit.MaxFailures)
	}
	// Right tokens pass: wrong ones from the owner's address (a NAT, a
	// proxy, this machine) do not lock the owner out (an attacker round:
	// 10 wrong tokens, 10 minutes).
	for _, tok := range []string{"owner-token", a.localToken} {
		if resp := post("Bearer " + tok); resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusUnauthorized {
			t.Fatalf("a right token from a throttled address on /mcp: %d, want it past authentication", resp.StatusCode)
		}
	}
	req, _ := http.NewRequest("GET", a.URL()+"/api/house", nil)
	req.Header.Set("Authorization", "Bearer "+a.localToken)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the local token from a throttled address on the house API: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	for tok, want := range map[string]int{"owner-token": http.StatusOK, "wrong-login-token": http.StatusTooManyRequests} {
		login, err := http.PostForm(a.URL()+"/login", url.Values{"token": {tok}}) // follows the login's redirect
		if err != nil {
			t.Fatal(err)
		}
		login.Body.Close()
		if login.StatusCode != want {
			t.Fatalf("the web login with %s from an address /mcp throttles: %d, want %d", tok, login.StatusCode, want)
		}
	}
	if resp := post("Bearer wrong-after-right"); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a wrong token after right ones: %d, want 429 (a success forgets nothing)", resp.StatusCode)
	}
	resp, err := http.Get(a.URL() + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		HTTP struct {
			Failed    uint64 `json:"bearer_tokens_failed"`
			Throttled uint64 `json:"bearer_tokens_throttled"`
		} `json:"http"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	// The throttled count has the wrong tokens on /mcp and the web login:
	// every door that shares the allowance counts in it.
	if h.HTTP.Failed != ratelimit.MaxFailures || h.HTTP.Throttled != 300-ratelimit.MaxFailures+2 {
		t.Fatalf("/healthz: %+v", h.HTTP)
	}
}
