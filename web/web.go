// Package web is the small web UI of Pilothouse: installed rules, their
// plans and firings, runs and traces, devices with live values. Pages are
// rendered on the server from embedded templates; a little vanilla JS
// applies server-sent events. Every engine call runs as the session's
// principal, so the UI is scoped exactly like the catalog.
package web

import (
	"bytes"
	"compress/gzip"
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/internal/ratelimit"
)

// Options configure the UI.
type Options struct {
	// Principals that may log in with their token. When empty, every
	// visitor is the owner (loopback-only serving is enforced by the caller).
	Principals []*engine.Principal
	Logger     *slog.Logger
	// SessionTTL bounds a login (default 12 hours).
	SessionTTL time.Duration
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// Guard is the allowed-host policy (DNS rebinding) and request body
	// bound, shared with /mcp; nil = loopback names only and the engine's
	// limits.max_request_bytes.
	Guard *mcpserver.Guard
	// Health, when set, reports the broker's and storage's state (what
	// /healthz reports): every page shows it, and polls it.
	Health func() Health
	// Load, when set, lists how the server fell behind under load (held
	// back the broker, kept summaries instead of traces, lost records),
	// shown on every page.
	Load func() []string
	// Counters, when set, is the /healthz document: the health page
	// explains its non-zero numbers, and every page links there while
	// one needs a look.
	Counters func() any
	// Sim, when set, drives the demo's simulated devices: their pages
	// show a simulate control to the owner.
	Sim Simulator
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// server is the UI's state: the engine, sessions and parsed templates.
type server struct {
	e      *engine.Engine
	o      Options
	log    *slog.Logger
	sess   *sessions
	logins *ratelimit.Failures
	pages  map[string]*template.Template
	rows   rowCache
	clock  clock

	// recipes are the cookbook's rules the editor starts from.
	recipes recipeBook
}

// Handler serves the UI. Mount it at "/".
func Handler(e *engine.Engine, o Options) http.Handler {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = 12 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Guard == nil {
		g := mcpserver.LimitOptions(e.Config().Limits)
		g.Logger, g.Now = o.Logger, o.Now
		o.Guard = mcpserver.NewGuard(g)
	}
	c := newClock(e.Config().TimeZone)
	s := &server{e: e, o: o, log: o.Logger, sess: newSessions(o.SessionTTL, o.Now), logins: o.Guard.Failures(), pages: parsePages(c), clock: c}
	return s.routes()
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", cacheFor(http.FileServerFS(static))))
	// Browsers ask for /favicon.ico whatever the page links.
	mux.Handle("GET /favicon.ico", http.RedirectHandler("/static/favicon.svg", http.StatusMovedPermanently))
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.login)
	mux.Handle("POST /logout", s.authed(s.logout))
	mux.Handle("GET /{$}", s.authed(s.rulesPage))
	// The list lives at /, its rules under /rules/NAME: a person trimming
	// a rule's address to /rules is sent to the list.
	mux.HandleFunc("GET /rules", toRulesList)
	mux.HandleFunc("GET /rules/{$}", toRulesList)
	mux.Handle("GET /rules/{name}", s.authed(s.rulePage))
	mux.Handle("POST /rules/{name}/{action}", s.authed(s.ruleAction))
	mux.Handle("GET /runs", s.authed(s.runsPage))
	mux.Handle("GET /runs/{id}", s.authed(s.runPage))
	mux.Handle("GET /runs/{id}/json", s.authed(s.runJSON))
	mux.Handle("GET /devices", s.authed(s.devicesPage))
	mux.Handle("GET /devices/{id}", s.authed(s.devicePage))
	mux.Handle("POST /devices/{id}/control", s.authed(s.controlAction))
	mux.Handle("POST /devices/{id}/simulate", s.authed(s.simulateAction))
	mux.Handle("GET /events", s.authed(s.bounded(s.events)))
	mux.Handle("GET /logbook", s.authed(s.logbookPage))
	mux.Handle("GET /helpers", s.authed(s.helpersPage))
	mux.Handle("POST /helpers", s.authed(s.helperCreate))
	mux.Handle("POST /helpers/{id}/delete", s.authed(s.helperDelete))
	mux.Handle("GET /guides", s.authed(s.guidesPage))
	mux.Handle("GET /guides/{id}", s.authed(s.guidesPage))
	mux.Handle("GET /status", s.authed(s.status))
	mux.Handle("GET /health", s.authed(s.healthPage))
	mux.Handle("GET /approvals", s.authed(s.approvalsPage))
	mux.Handle("GET /approvals/{id}", s.authed(s.approvalPage))
	mux.Handle("POST /approvals/{id}/{verb}", s.authed(s.approvalAction))
	mux.Handle("GET /api/approvals", s.apiAuthed(s.apiApprovals))
	mux.Handle("POST /api/approvals/{id}/{verb}", s.apiAuthed(s.apiDecide))
	s.editorRoutes(mux)
	// Every route, the login page and static files included, is behind
	// the guard: a rebound name must not even get an owner session.
	return secureHeaders(s.o.Guard.Wrap(mux))
}

// handlerFunc is a page handler that runs with a session.
type handlerFunc func(w http.ResponseWriter, r *http.Request, ss *session)

// ctx is the request context carrying the session's principal: every engine
// call goes through it.
func (ss *session) ctx(r *http.Request) context.Context {
	return engine.WithPrincipal(r.Context(), ss.principal)
}

func secureHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Frame-Options", "DENY")
		h.ServeHTTP(w, r)
	})
}

// toRulesList sends /rules (and /rules/) to the rules list at /, keeping
// the query.
func toRulesList(w http.ResponseWriter, r *http.Request) {
	to := "/"
	if r.URL.RawQuery != "" {
		to += "?" + r.URL.RawQuery
	}
	http.Redirect(w, r, to, http.StatusFound)
}

func cacheFor(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		h.ServeHTTP(w, r)
	})
}

// page is what every template receives.
type page struct {
	Title   string
	Nav     string // active nav item
	User    string // principal name ("" when logins are off)
	CSRF    string
	Flash   string
	FlashTo string // a link after the flash ("" = none)
	Live    string // SSE topics the page listens to ("" = none)
	Charts  bool   // the page draws charts (loads uPlot)
	NoNav   bool   // the login page has nothing to navigate to yet
	Status  *statusView
	Load    []string
	Data    any
	Elapsed time.Duration
}

// render executes the named page into a buffer first, so a template error
// never leaves a half-written page.
func (s *server) render(w http.ResponseWriter, r *http.Request, ss *session, name string, p page) {
	s.renderCode(w, r, ss, http.StatusOK, name, p)
}

// gzipMin is the page size from which responses are compressed (a page of
// a thousand rules is ~600 KB of HTML, ~40 KB gzipped).
const gzipMin = 16 << 10

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(q, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

func (s *server) renderCode(w http.ResponseWriter, r *http.Request, ss *session, code int, name string, p page) {
	t := s.pages[name]
	if ss != nil {
		p.CSRF = ss.csrf
		if len(s.o.Principals) > 0 {
			p.User = ss.principal.Name
		}
		p.Flash, p.FlashTo = ss.takeFlash()
		st := s.statusView(ss)
		p.Status = &st
		if s.o.Load != nil {
			p.Load = s.o.Load()
		}
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", p); err != nil {
		s.log.Error("rendering page", "page", name, "err", err)
		http.Error(w, "rendering the page failed", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Add("Vary", "Accept-Encoding")
	if buf.Len() >= gzipMin && acceptsGzip(r) {
		h.Set("Content-Encoding", "gzip")
		w.WriteHeader(code)
		zw := gzip.NewWriter(w)
		_, _ = zw.Write(buf.Bytes())
		_ = zw.Close()
		return
	}
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// fail renders an error page with a status code; internal errors are
// logged, not shown. Storage that cannot serve (locked by another program,
// disk full, read-only) is not an internal error: the page is 503 and says
// so in words, as /healthz does, and that nothing was changed.
func (s *server) fail(w http.ResponseWriter, r *http.Request, ss *session, code int, msg string, err error) {
	switch {
	case errors.Is(err, engine.ErrUnavailable):
		s.log.Warn("web request failed: storage unavailable", "path", r.URL.Path, "err", err)
		code = http.StatusServiceUnavailable
		msg += " Storage is unavailable, so nothing was changed: " + err.Error() +
			". The database may be locked by another program (a backup?), or its disk full or read-only; /healthz says when it writes again. Retry later."
		w.Header().Set("Retry-After", "5")
	case err != nil && !errors.Is(err, context.Canceled):
		s.log.Error("web request failed", "path", r.URL.Path, "err", err)
	}
	s.renderCode(w, r, ss, code, "error", page{Title: http.StatusText(code), Data: map[string]any{"Code": code, "Message": msg}})
}

// redirect answers a POST with 303 See Other.
func redirect(w http.ResponseWriter, r *http.Request, to string) {
	http.Redirect(w, r, to, http.StatusSeeOther)
}
