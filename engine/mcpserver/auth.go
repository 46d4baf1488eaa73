package mcpserver

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/ratelimit"
)

// bearer authenticates a request's bearer token against principals, within
// the failed-token bound per client address (as the web login): after
// ratelimit.MaxFailures wrong tokens within ratelimit.Window, requests from
// that address are refused with 429 before any token is compared, even a
// right one, so a script cannot go on guessing; only the house's own
// local token (Unguessable) still passes, so the command line on this
// machine is not locked out by whoever sends wrong tokens from the same
// address. A request without a token (a client asking what authentication
// is needed) is no failure. A success does not forget the failures: a
// client sharing the address would otherwise clear a guesser's count. It
// returns nil having answered the request.
func (g *Guard) bearer(w http.ResponseWriter, r *http.Request, principals []*engine.Principal) *engine.Principal {
	addr := ratelimit.ClientKey(r.RemoteAddr)
	if p := Authenticate(r, principals); p != nil && p.Unguessable {
		return p
	}
	if wait := g.tokens.Wait(addr); wait > 0 {
		if n := g.tokensThrottled.Add(1); n == 1 || n%1000 == 0 {
			g.log.Warn("refused a bearer token: too many wrong ones from this address", "remote", r.RemoteAddr, "wait", wait.Round(time.Second), "throttled", n)
		}
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
		http.Error(w, fmt.Sprintf("Too many wrong bearer tokens from this address: try again in %s.", engine.Plural(int(wait/time.Minute)+1, "minute", "")),
			http.StatusTooManyRequests)
		return nil
	}
	p := Authenticate(r, principals)
	if p == nil {
		if presented(r) {
			g.tokens.Fail(addr)
			if n := g.tokensFailed.Add(1); n == 1 || n%1000 == 0 {
				g.log.Warn("refused a wrong bearer token", "remote", r.RemoteAddr, "failed", n)
			}
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="pilothouse", error="invalid_token"`)
		http.Error(w, "a valid bearer token is required", http.StatusUnauthorized)
	}
	return p
}

// Failures is the bound on wrong secrets per client address that every
// door behind the guard shares (bearer tokens here, the web UI's login), so
// a guesser does not get a fresh allowance at each.
func (g *Guard) Failures() *ratelimit.Failures { return g.tokens }

// presented reports whether r carries a bearer token at all.
func presented(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	return len(h) > 7 && strings.EqualFold(h[:7], "bearer ") && strings.TrimSpace(h[7:]) != ""
}
