package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
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
// Host check, so /mcp and the web UI accept the same names. Sessions are
// bounded by the session table (idle expiry, per-principal and total
// caps), event streams by the guard's stream limits; a GET for a session
// that is not the caller's live one is refused before any stream opens.
func (s *Server) HTTPHandler(o HTTPOptions) http.Handler {
	if o.Path == "" {
		o.Path = "/mcp"
	}
	if o.Guard == nil {
		g := LimitOptions(s.e.Config().Limits)
		g.Logger = s.log
		o.Guard = NewGuard(g)
	}
	lim := s.limits()
	h := &httpHandler{s: s, o: o, sessions: newSessionTable(lim.MaxSessions, lim.MaxSessionsPerPrincipal, lim.SessionIdle)}
	h.streamable = server.NewStreamableHTTPServer(s.MCP,
		server.WithEndpointPath(o.Path),
		server.WithDisableLocalhostProtection(true),
		server.WithSessionIdManagerResolver(sessionResolver{h.sessions}),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			if p := engine.PrincipalFrom(r.Context()); p != nil {
				return engine.WithPrincipal(ctx, p)
			}
			return ctx
		}),
	)
	h.sessions.end = h.endSession
	s.sessions.Store(h.sessions)
	return h
}

// httpHandler is the /mcp endpoint: the checks in front of mcp-go's
// streamable server.
type httpHandler struct {
	s          *Server
	o          HTTPOptions
	streamable *server.StreamableHTTPServer
	sessions   *sessionTable
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.o.Guard.CheckHost(w, r) {
		return
	}
	if !originAllowed(r, h.o.AllowedOrigins) {
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return
	}
	p := h.s.def
	if len(h.o.Principals) > 0 {
		if p = h.o.Guard.bearer(w, r, h.o.Principals); p == nil {
			return
		}
	}
	if !h.o.Guard.BoundBody(w, r) {
		return
	}
	r = r.WithContext(engine.WithPrincipal(r.Context(), p))
	switch {
	case r.Method == http.MethodGet && !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)):
		h.serveStream(w, r, p.Name)
	case r.Method == http.MethodPost:
		h.servePost(w, r, p.Name)
	default:
		h.streamable.ServeHTTP(w, r)
	}
}

// serveStream opens the standalone event stream of a live session the
// caller holds, within the stream limits; the stream ends with the session.
func (h *httpHandler) serveStream(w http.ResponseWriter, r *http.Request, principal string) {
	id := r.Header.Get(server.HeaderKeySessionID)
	if id == "" {
		http.Error(w, "GET /mcp opens the event stream of a session: send the Mcp-Session-Id header that initialize returned.", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	detach, err := h.sessions.attach(principal, id, cancel)
	if err != nil {
		h.sessionNotFound(w, err)
		return
	}
	defer detach()
	release, ok := h.o.Guard.OpenStream(w, r, principal)
	if !ok {
		return
	}
	defer release()
	h.streamable.ServeHTTP(w, r.WithContext(ctx))
}

// sessionNotFound answers a request for a session that is not the caller's
// live one with 404, which tells a client to initialize again.
func (h *httpHandler) sessionNotFound(w http.ResponseWriter, err error) {
	h.sessions.unknown.Add(1)
	idle := h.sessions.idle
	msg := "Session not found: initialize a new session (POST initialize without Mcp-Session-Id)."
	if errors.Is(err, errSessionIdle) {
		msg = fmt.Sprintf("Session ended: it was unused for more than %v (limits.session_idle). Initialize a new session.", idle)
	}
	http.Error(w, msg, http.StatusNotFound)
}

// postPeek is what servePost reads of a message: its method, and the
// protocol version its _meta declares.
type postPeek struct {
	Method string `json:"method"`
	Params struct {
		Meta *mcp.Meta `json:"_meta"`
	} `json:"params"`
}

// servePost reserves a session for an initialize (within the session
// bounds) and a stream slot for a subscriptions/listen request, which
// holds its response open like a GET stream.
func (h *httpHandler) servePost(w http.ResponseWriter, r *http.Request, principal string) {
	var peek postPeek
	if r.Body != nil {
		if b, err := io.ReadAll(r.Body); err == nil { // already in memory (BoundBody)
			_ = json.Unmarshal(b, &peek)
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
	}
	modern := mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) || mcp.IsModernProtocol(peek.Params.Meta.ProtocolVersion())
	switch {
	case peek.Method == string(mcp.MethodInitialize) && !modern:
		id, err := h.sessions.admit(principal)
		var ref *refusal
		if errors.As(err, &ref) {
			w.Header().Set("Retry-After", "5")
			http.Error(w, ref.msg, ref.code)
			return
		}
		defer h.sessions.dropUnclaimed(id)
		r = r.WithContext(context.WithValue(r.Context(), reservedKey{}, id))
	case peek.Method != "" && !modern:
		// A request on a session: say why one that ended is gone (mcp-go
		// only says "Invalid session ID").
		if err := h.sessions.use(principal, r.Header.Get(server.HeaderKeySessionID)); err != nil {
			h.sessionNotFound(w, err)
			return
		}
	case peek.Method == string(mcp.MethodSubscriptionsListen):
		release, ok := h.o.Guard.OpenStream(w, r, principal)
		if !ok {
			return
		}
		defer release()
	}
	// Stored runs read for this request stay counted against
	// limits.max_served_run_bytes until the response is written.
	ctx, done := engine.ServingRuns(r.Context())
	defer done()
	h.streamable.ServeHTTP(w, r.WithContext(ctx))
}

// endSession cleans up mcp-go's state of a session the table ended, the way
// a client's DELETE would (Terminate, then mcp-go's per-session cleanup).
func (h *httpHandler) endSession(id string) {
	req, err := http.NewRequest(http.MethodDelete, h.o.Path, nil)
	if err != nil {
		return
	}
	req.Header.Set(server.HeaderKeySessionID, id)
	h.streamable.ServeHTTP(discardResponse{}, req)
}

// discardResponse is a ResponseWriter nobody reads.
type discardResponse struct{}

func (discardResponse) Header() http.Header         { return http.Header{} }
func (discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (discardResponse) WriteHeader(int)             {}

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
