package mcpserver

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pilothouse/pilothouse/engine"
)

// HTTPOptions configure the streamable HTTP endpoint.
type HTTPOptions struct {
	// Path of the endpoint (default "/mcp").
	Path string
	// Principals that may authenticate with a bearer token. When empty,
	// requests run as Default (only allowed on loopback listeners: the
	// caller refuses to start otherwise).
	Principals []*engine.Principal
	// AllowedOrigins are extra browser origins allowed to call (the
	// server's own loopback origins always are).
	AllowedOrigins []string
	// Guard is the allowed-host policy and body bound shared with the web
	// UI (nil: loopback names only, and the engine's MaxRequestBytes).
	Guard *Guard
}

// HTTPHandler serves MCP over streamable HTTP behind the shared guard
// (allowed hosts: DNS rebinding; the body bound: 413), an Origin check and
// bearer-token authentication. The guard replaces mcp-go's loopback-only
// Host check, so /mcp and the web UI accept the same names.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	if o.Path == "" {
		o.Path = "/mcp"
	}
	if o.Guard == nil {
		o.Guard = NewGuard(GuardOptions{MaxBodyBytes: s.limits().MaxRequestBytes, Logger: s.log})
	}
	streamable := server.NewStreamableHTTPServer(s.MCP,
		server.WithEndpointPath(o.Path),
		server.WithDisableLocalhostProtection(true),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			if p := engine.PrincipalFrom(r.Context()); p != nil {
				return engine.WithPrincipal(ctx, p)
			}
			return ctx
		}),
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !o.Guard.CheckHost(w, r) {
			return
		}
		if !originAllowed(r, o.AllowedOrigins) {
			http.Error(w, "origin not allowed", http.StatusForbidden)
			return
		}
		p := s.def
		if len(o.Principals) > 0 {
			p = Authenticate(r, o.Principals)
			if p == nil {
				w.Header().Set("WWW-Authenticate", `Bearer realm="pilothouse", error="invalid_token"`)
				http.Error(w, "a valid bearer token is required", http.StatusUnauthorized)
				return
			}
		}
		if !o.Guard.BoundBody(w, r) {
			return
		}
		streamable.ServeHTTP(w, r.WithContext(engine.WithPrincipal(r.Context(), p)))
	})
}

// Authenticate finds the principal of a request's bearer token.
func Authenticate(r *http.Request, principals []*engine.Principal) *engine.Principal {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return nil
	}
	tok := strings.TrimSpace(h[7:])
	for _, p := range principals {
		if p.Matches(tok) {
			return p
		}
	}
	return nil
}

// originAllowed accepts requests without Origin (non-browser clients), from
// loopback origins, from the request's own host, or from the allow list.
func originAllowed(r *http.Request, allowed []string) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	for _, a := range allowed {
		if strings.EqualFold(a, o) {
			return true
		}
	}
	u, err := url.Parse(o)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	return strings.EqualFold(u.Host, r.Host)
}
