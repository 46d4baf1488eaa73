package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/pilothouse/pilothouse/internal/ratelimit"
	"github.com/pilothouse/pilothouse/rules"
)

// GuardOptions configure the HTTP guard.
type GuardOptions struct {
	// AllowedHosts are the host names (no port) the server may be reached
	// by besides loopback: a reverse proxy's name, the house server's LAN
	// name. Case-insensitive, exact.
	AllowedHosts []string
	// MaxBodyBytes bounds a request body (0 = rules.DefaultLimits).
	MaxBodyBytes int
	// MaxConnections, MaxStreams and MaxStreamsPerPrincipal bound what
	// clients hold open (0 = rules.DefaultLimits).
	MaxConnections, MaxStreams, MaxStreamsPerPrincipal int
	// BodyTimeout bounds the time to send a request body (Bodies; 0 =
	// DefaultBodyTimeout).
	BodyTimeout time.Duration
	// WriteTimeout bounds the time a client may take nothing of a response
	// (Writes; 0 = DefaultWriteTimeout).
	WriteTimeout time.Duration
	Logger       *slog.Logger
	// Now is the clock of the failed-token bound (nil: time.Now).
	Now func() time.Time
}

// LimitOptions are the guard options that come from limits: the body
// bound, connections and event streams.
func LimitOptions(l rules.Limits) GuardOptions {
	return GuardOptions{MaxBodyBytes: l.MaxRequestBytes, MaxConnections: l.MaxConnections,
		MaxStreams: l.MaxStreams, MaxStreamsPerPrincipal: l.MaxStreamsPerPrincipal}
}

// Guard is the policy every HTTP route but /healthz shares, /mcp and the
// web UI alike: the allowed-host check against DNS rebinding, and the
// request body bound.
//
// DNS rebinding: a page at http://evil.example:8080 whose name the attacker
// re-points at 127.0.0.1 is, to the browser, its own origin: it may read
// responses, cookies set for it and CSRF tokens. Only the Host header tells
// such a request apart, so a request is served only when its Host is a
// loopback name ("localhost", a loopback IP), an IP literal (a browser sends
// one only when it was pointed at that address itself: no name to rebind),
// or a configured name. mcp-go's own protection (loopback connections with
// a loopback Host) is replaced by this one so that both routes answer the
// same and configured names work behind a local reverse proxy.
type Guard struct {
	hosts        map[string]bool
	maxBody      int64
	bodyTimeout  time.Duration
	writeTimeout time.Duration
	log          *slog.Logger

	refusedHosts  atomic.Uint64
	refusedBodies atomic.Uint64
	lateBodies    atomic.Uint64
	cutResponses  atomic.Uint64

	// tokens bounds wrong bearer tokens per client address (bearer).
	tokens *ratelimit.Failures

	streams streamLimit
	conns   connLimit
}

// NewGuard builds the shared guard.
func NewGuard(o GuardOptions) *Guard {
	d := rules.DefaultLimits
	for _, f := range []struct{ v, def *int }{
		{&o.MaxBodyBytes, &d.MaxRequestBytes}, {&o.MaxConnections, &d.MaxConnections},
		{&o.MaxStreams, &d.MaxStreams}, {&o.MaxStreamsPerPrincipal, &d.MaxStreamsPerPrincipal},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.BodyTimeout <= 0 {
		o.BodyTimeout = DefaultBodyTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	g := &Guard{hosts: map[string]bool{}, maxBody: int64(o.MaxBodyBytes), bodyTimeout: o.BodyTimeout, writeTimeout: o.WriteTimeout, log: o.Logger, tokens: ratelimit.New(o.Now),
		streams: streamLimit{maxTotal: o.MaxStreams, maxPer: o.MaxStreamsPerPrincipal, open: map[string]int{}},
		conns:   connLimit{max: o.MaxConnections, conns: map[net.Conn]*connState{}}}
	for _, h := range o.AllowedHosts {
		g.hosts[strings.ToLower(strings.TrimSpace(h))] = true
	}
	return g
}

// AllowedHost reports whether a Host header value (host or host:port) may
// be served.
func (g *Guard) AllowedHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	if host == "" {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true // an IP literal: no name to rebind (loopback or not)
	}
	host = strings.ToLower(host)
	return host == "localhost" || g.hosts[host]
}

// Wrap applies the guard to h: a foreign Host is refused with 403, a body
// over the bound with 413, both before h runs.
func (g *Guard) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.CheckHost(w, r) || !g.BoundBody(w, r) {
			return
		}
		h.ServeHTTP(w, r)
	})
}

// CheckHost answers 403 and returns false when r's Host is not allowed.
func (g *Guard) CheckHost(w http.ResponseWriter, r *http.Request) bool {
	if g.AllowedHost(r.Host) {
		return true
	}
	if n := g.refusedHosts.Add(1); n == 1 || n%1000 == 0 {
		g.log.Warn("refused a request for a host that is not allowed (DNS rebinding protection); add the name to allowed_hosts if it is yours",
			"host", r.Host, "remote", r.RemoteAddr, "refused", n)
	}
	http.Error(w, fmt.Sprintf("Forbidden: host %q is not allowed. This server answers to loopback names, IP addresses and the names in allowed_hosts (configuration file or --allowed-hosts).", r.Host), http.StatusForbidden)
	return false
}

// BoundBody reads r's body into memory up to the bound, before anything
// parses it (mcp-go reads a whole body with io.ReadAll; a form parser up to
// 10 MB). Beyond the bound it answers 413 and returns false, having kept
// at most bound+1 bytes (see tooLarge for what it reads and discards).
func (g *Guard) BoundBody(w http.ResponseWriter, r *http.Request) bool {
	if r.Body == nil || r.Body == http.NoBody {
		return true
	}
	if r.ContentLength > g.maxBody {
		g.tooLarge(w, r, r.ContentLength, r.Body)
		return false
	}
	raw := r.Body
	// Sized by what is declared only up to a small bound: a declared
	// length costs nothing to send, so 500 slow clients declaring 1 MB
	// each would otherwise hold 500 MB before sending a byte more.
	buf := bytes.NewBuffer(make([]byte, 0, max(0, min(r.ContentLength, g.maxBody, bodyPrealloc))+1))
	_, err := buf.ReadFrom(http.MaxBytesReader(w, raw, g.maxBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		g.tooLarge(w, r, -1, raw)
		return false
	case err != nil:
		http.Error(w, "reading the request body failed: "+err.Error(), http.StatusBadRequest)
		return false
	}
	r.Body = io.NopCloser(buf)
	return true
}

// bodyPrealloc bounds the buffer BoundBody makes before a body arrives;
// it grows with what really arrives.
const bodyPrealloc = 32 << 10

// drainFactor bounds what tooLarge discards of a body over the bound, as a
// multiple of the bound.
const drainFactor = 8

// tooLarge answers 413 (a JSON-RPC error to a JSON request, so an MCP
// client reads why) and closes the connection. A client that writes its
// whole request before reading (Node's fetch, many others) would see the
// connection reset instead of the answer if the server closed with its body
// unread, so the rest of a body up to drainFactor times the bound is read
// and discarded first, within the body timeout (Bodies); a larger declared
// body, or one the client waits to send (Expect: 100-continue), is not read.
func (g *Guard) tooLarge(w http.ResponseWriter, r *http.Request, declared int64, body io.Reader) {
	if n := g.refusedBodies.Add(1); n == 1 || n%1000 == 0 {
		g.log.Warn("refused a request body over limits.max_request_bytes", "path", r.URL.Path, "limit", g.maxBody,
			"content_length", declared, "remote", r.RemoteAddr, "refused", n)
	}
	drain := drainFactor * g.maxBody
	if declared <= drain && !strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		_, _ = io.CopyN(io.Discard, body, drain)
	}
	w.Header().Set("Connection", "close")
	msg := fmt.Sprintf("Request body too large: the limit is %d bytes (limits.max_request_bytes).", g.maxBody)
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		http.Error(w, msg, http.StatusRequestEntityTooLarge)
		return
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": mcp.INVALID_REQUEST, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusRequestEntityTooLarge)
	_, _ = w.Write(append(b, '\n'))
}

// Refused counts the requests refused so far, by reason.
func (g *Guard) Refused() (hosts, bodies uint64) {
	return g.refusedHosts.Load(), g.refusedBodies.Load()
}
