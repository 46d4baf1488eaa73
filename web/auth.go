package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/ratelimit"
)

const (
	cookieName = "pilothouse_session"
	// maxSessions bounds the in-memory session table, maxSessionsPer one
	// principal's share of it: a principal's 65th login ends its own oldest
	// session; a full table ends the oldest session of the principal that
	// holds the most, so no principal can log another out by logging in.
	maxSessions    = 4096
	maxSessionsPer = 64
)

// session is one browser's login: its principal and its CSRF token.
type session struct {
	id        string
	principal *engine.Principal
	csrf      string
	expires   time.Time

	mu        sync.Mutex
	flash     string
	flashLink string // a link after the flash message ("" = none)
}

func (ss *session) setFlash(msg string) { ss.setFlashLink(msg, "") }

// setFlashLink sets the next page's message with a link (a run's trace).
func (ss *session) setFlashLink(msg, href string) {
	ss.mu.Lock()
	ss.flash, ss.flashLink = msg, href
	ss.mu.Unlock()
}

func (ss *session) takeFlash() (string, string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	f, l := ss.flash, ss.flashLink
	ss.flash, ss.flashLink = "", ""
	return f, l
}

// sessions maps random session ids to sessions, in memory, with expiry.
type sessions struct {
	ttl time.Duration
	now func() time.Time

	mu   sync.Mutex
	byID map[string]*session
	per  map[string]int // principal name → its sessions
}

func newSessions(ttl time.Duration, now func() time.Time) *sessions {
	return &sessions{ttl: ttl, now: now, byID: map[string]*session{}, per: map[string]int{}}
}

func randomToken() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// create starts a session for p, evicting expired sessions, then p's own
// oldest (past maxSessionsPer), then the oldest of the principal holding
// the most (past maxSessions), to stay bounded.
func (s *sessions) create(p *engine.Principal) *session {
	now := s.now()
	ss := &session{id: randomToken(), principal: p, csrf: randomToken(), expires: now.Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byID) >= maxSessions || s.per[p.Name] >= maxSessionsPer {
		for id, x := range s.byID {
			if !now.Before(x.expires) {
				s.drop(id)
			}
		}
	}
	victim := ""
	switch {
	case s.per[p.Name] >= maxSessionsPer:
		victim = p.Name
	case len(s.byID) >= maxSessions:
		for name, n := range s.per {
			if victim == "" || n > s.per[victim] {
				victim = name
			}
		}
	}
	if victim != "" {
		var oldest *session
		for _, x := range s.byID {
			if x.principal.Name == victim && (oldest == nil || x.expires.Before(oldest.expires)) {
				oldest = x
			}
		}
		if oldest != nil {
			s.drop(oldest.id)
		}
	}
	s.byID[ss.id] = ss
	s.per[p.Name]++
	return ss
}

// drop removes a session (s.mu held).
func (s *sessions) drop(id string) {
	ss := s.byID[id]
	if ss == nil {
		return
	}
	delete(s.byID, id)
	if s.per[ss.principal.Name]--; s.per[ss.principal.Name] <= 0 {
		delete(s.per, ss.principal.Name)
	}
}

func (s *sessions) get(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.byID[id]
	if ss == nil {
		return nil
	}
	if !s.now().Before(ss.expires) {
		s.drop(id)
		return nil
	}
	return ss
}

func (s *sessions) remove(id string) {
	s.mu.Lock()
	s.drop(id)
	s.mu.Unlock()
}

func (s *server) loginRequired() bool { return len(s.o.Principals) > 0 }

func (s *server) setCookie(w http.ResponseWriter, r *http.Request, ss *session) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: ss.id, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, Expires: ss.expires})
}

func (s *server) session(r *http.Request) *session {
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return nil
	}
	return s.sess.get(c.Value)
}

// authed resolves the session (creating an owner session when logins are
// off, redirecting to the login page when they are on) and checks the CSRF
// token of every POST.
func (s *server) authed(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// One request's writes fail fast once storage failed.
		r = r.WithContext(engine.FailFast(r.Context()))
		ss := s.session(r)
		if ss == nil {
			if s.loginRequired() {
				if r.Method != http.MethodGet || r.URL.Path == "/events" || r.URL.Path == "/status" {
					http.Error(w, "login required", http.StatusUnauthorized)
					return
				}
				redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()))
				return
			}
			ss = s.sess.create(engine.Owner)
			s.setCookie(w, r, ss)
		}
		if r.Method == http.MethodPost && !s.csrfOK(r, ss) {
			s.fail(w, r, ss, http.StatusForbidden, "This form has expired or did not come from this page. Go back, reload and try again.", nil)
			return
		}
		h(w, r, ss)
	})
}

// csrfOK checks the form token against the session's, and a present
// Origin header against the request's own host.
func (s *server) csrfOK(r *http.Request, ss *session) bool {
	if !sameOrigin(r) {
		return false
	}
	tok := r.PostFormValue("csrf")
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(ss.csrf)) == 1
}

func sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true // not a browser form post, or an old browser: the CSRF token decides
	}
	u, err := url.Parse(o)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

type loginData struct {
	Next  string
	Error string
}

func (s *server) loginPage(w http.ResponseWriter, r *http.Request) {
	if !s.loginRequired() {
		redirect(w, r, "/")
		return
	}
	s.render(w, r, nil, "login", page{Title: "Log in", NoNav: true, Data: loginData{Next: safeNext(r.URL.Query().Get("next"))}})
}

func (s *server) login(w http.ResponseWriter, r *http.Request) {
	if !s.loginRequired() {
		redirect(w, r, "/")
		return
	}
	if !sameOrigin(r) {
		http.Error(w, "cross-origin login refused", http.StatusForbidden)
		return
	}
	next := safeNext(r.PostFormValue("next"))
	tok := strings.TrimSpace(r.PostFormValue("token"))
	p := s.principalOf(tok)
	pass, wait := s.logins.Admit(attempt(r, tok != "", p))
	if wait > 0 {
		mins := int(wait/time.Minute) + 1
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
		s.log.Warn("web login refused: too many failures", "remote", r.RemoteAddr)
		s.renderCode(w, r, nil, http.StatusTooManyRequests, "login", page{Title: "Log in", NoNav: true,
			Data: loginData{Next: next, Error: "Too many failed logins from this address. Try again in " + engine.Plural(mins, "minute", "") + "."}})
		return
	}
	if !pass {
		s.log.Info("web login refused", "remote", r.RemoteAddr)
		s.renderCode(w, r, nil, http.StatusUnauthorized, "login", page{Title: "Log in", NoNav: true, Data: loginData{Next: next, Error: "That token is not valid."}})
		return
	}
	if old := s.session(r); old != nil {
		s.sess.remove(old.id)
	}
	ss := s.sess.create(p)
	s.setCookie(w, r, ss)
	s.log.Info("web login", "principal", p.Name)
	redirect(w, r, next)
}

func (s *server) logout(w http.ResponseWriter, r *http.Request, ss *session) {
	s.sess.remove(ss.id)
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil, MaxAge: -1})
	if s.loginRequired() {
		redirect(w, r, "/login")
		return
	}
	redirect(w, r, "/")
}

// safeNext keeps post-login redirects on this site: only an absolute path
// of this server survives, anything else is "/".
func safeNext(next string) string {
	if !sameSitePath(next) {
		return "/"
	}
	return next
}

// sameSitePath reports whether p is a same-site absolute path however it is
// read. Browsers drop tabs and newlines anywhere in a URL and treat '\' as
// '/' ("/\t/evil" and "/\\evil" are "//evil", another host), and a proxy
// may decode percent-escapes once: so only printable ASCII without space or
// backslash may appear, raw or percent-decoded, and neither form may start
// with "//". (The pages' own paths, which is what next carries, are
// escaped ASCII.)
func sameSitePath(p string) bool {
	dec, err := url.PathUnescape(p)
	if err != nil || len(p) > 2048 {
		return false
	}
	for _, s := range []string{p, dec} {
		if !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") {
			return false
		}
		for i := 0; i < len(s); i++ {
			if c := s[i]; c <= ' ' || c >= 0x7f || c == '\\' {
				return false
			}
		}
	}
	u, err := url.Parse(p)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil && u.Opaque == ""
}

// principalOf is the principal whose token tok is (nil: none).
func (s *server) principalOf(tok string) *engine.Principal {
	for _, p := range s.o.Principals {
		if p.Matches(tok) {
			return p
		}
	}
	return nil
}

// attempt describes a presented token for the wrong-token bound that the
// web UI shares with /mcp and the house API.
func attempt(r *http.Request, presented bool, p *engine.Principal) ratelimit.Attempt {
	return ratelimit.Attempt{Addr: ratelimit.ClientKey(r.RemoteAddr), Presented: presented, Right: p != nil}
}
