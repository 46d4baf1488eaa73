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

// bearer answers /mcp's request through Admit: a right token passes; 429
// with Retry-After while its address is throttled (after
// ratelimit.MaxFailures wrong tokens within ratelimit.Window, so a script
// cannot go on guessing), 401 without a right token. A request without a
// token (a client asking what authentication is needed) is no failure, and
// a success does not forget the failures: a client sharing the address
// would otherwise clear a guesser's count. It returns nil having answered.
func (g *Guard) bearer(w http.ResponseWriter, r *http.Request, principals []*engine.Principal) *engine.Principal {
	p, wait := g.Admit(r, principals)
	switch {
	case wait > 0:
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
		http.Error(w, fmt.Sprintf("Too many wrong bearer tokens from this address: try again in %s.", engine.Plural(int(wait/time.Minute)+1, "minute", "")),
			http.StatusTooManyRequests)
	case p == nil:
		w.Header().Set("WWW-Authenticate", `Bearer realm="pilothouse", error="invalid_token"`)
		http.Error(w, "a valid bearer token is required", http.StatusUnauthorized)
	}
	return p
}

// Admit authenticates r's bearer token within the wrong-token bound of its
// address, for every door that takes tokens (/mcp, the house API): the
// principal, or nil and how long the address must wait (0: the token was
// missing or wrong, and a wrong one is counted). The token is compared
// once; a right one passes even a throttled address.
func (g *Guard) Admit(r *http.Request, principals []*engine.Principal) (*engine.Principal, time.Duration) {
	p := Authenticate(r, principals)
	a := ratelimit.Attempt{Addr: ratelimit.ClientKey(r.RemoteAddr), Presented: presented(r), Right: p != nil}
	pass, wait := g.tokens.Admit(a)
	failed, throttled := g.tokens.Counts()
	switch {
	case wait > 0:
		if throttled == 1 || throttled%1000 == 0 {
			g.log.Warn("refused a bearer token: too many wrong ones from this address", "remote", r.RemoteAddr, "wait", wait.Round(time.Second), "throttled", throttled)
		}
		return nil, wait
	case !pass && a.Presented:
		if failed == 1 || failed%1000 == 0 {
			g.log.Warn("refused a wrong bearer token", "remote", r.RemoteAddr, "failed", failed)
		}
	}
	return p, 0
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
