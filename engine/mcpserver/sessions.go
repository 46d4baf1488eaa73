package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pilothouse/pilothouse/engine"
)

// sessionTable is the MCP sessions of the streamable HTTP endpoint: who
// holds each, when it was last used and which event streams it has open.
// mcp-go keeps a session (about 10 KB: its notification buffers, its
// registration) from initialize until a DELETE, which most clients never
// send: 60,000 initialize requests held a gigabyte. The table bounds them:
//
//   - a session unused for limits.session_idle, with no open stream, ends;
//   - a principal holds at most limits.max_sessions_per_principal: its
//     next initialize ends its least recently used session without an open
//     stream (its client gets 404 and initializes again, as the transport
//     specifies);
//   - the server holds at most limits.max_sessions: beyond, initialize is
//     refused with 503.
//
// A session ends the way a DELETE ends it (mcp-go's Terminate and state
// cleanup), and its open streams are closed. The table is also mcp-go's
// SessionIdManager (through sessionResolver): only ids it issued, to the
// same principal, are valid.
type sessionTable struct {
	maxTotal, maxPer int
	idle             time.Duration
	now              func() time.Time
	// end cleans up mcp-go's state of a session the table dropped.
	end func(id string)

	mu   sync.Mutex
	byID map[string]*mcpSession
	per  map[string]int // principal → sessions

	endedIdle, endedEvicted, endedClosed, refused, unknown atomic.Uint64
}

type mcpSession struct {
	id        string
	principal string
	last      time.Time
	claimed   bool // mcp-go asked for it (initialize reached Generate)
	streams   map[uint64]context.CancelFunc
	next      uint64
}

func newSessionTable(maxTotal, maxPer int, idle time.Duration) *sessionTable {
	return &sessionTable{maxTotal: maxTotal, maxPer: maxPer, idle: idle, now: time.Now,
		byID: map[string]*mcpSession{}, per: map[string]int{}}
}

// refusal is an initialize the table will not admit: the HTTP status and
// why.
type refusal struct {
	code int
	msg  string
}

func (r *refusal) Error() string { return r.msg }

// admit reserves a session for principal ahead of an initialize request,
// ending idle sessions and, at the principal's bound, its least recently
// used one without a stream. The returned id is what Generate hands mcp-go.
func (t *sessionTable) admit(principal string) (string, error) {
	t.mu.Lock()
	ended := t.expireLocked()
	var evicted string
	if t.per[principal] >= t.maxPer {
		v := t.lruLocked(principal)
		if v == nil {
			t.mu.Unlock()
			t.endAll(ended)
			t.refused.Add(1)
			return "", &refusal{http.StatusTooManyRequests, fmt.Sprintf("Too many MCP sessions: principal %q holds %d, each with an open event stream (limits.max_sessions_per_principal). End one (DELETE /mcp with its Mcp-Session-Id) and retry.", principal, t.per[principal])}
		}
		evicted = v.id
		t.removeLocked(v)
		t.endedEvicted.Add(1)
	}
	if len(t.byID) >= t.maxTotal {
		t.mu.Unlock()
		t.endAll(append(ended, evicted))
		t.refused.Add(1)
		return "", &refusal{http.StatusServiceUnavailable, fmt.Sprintf("Too many MCP sessions: the server holds %d, the most it keeps (limits.max_sessions); sessions unused for %v end by themselves. Retry later.", t.maxTotal, t.idle)}
	}
	s := &mcpSession{id: newSessionID(), principal: principal, last: t.now()}
	t.byID[s.id] = s
	t.per[principal]++
	t.mu.Unlock()
	t.endAll(append(ended, evicted))
	return s.id, nil
}

// newSessionID is a random session id in mcp-go's format.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "mcp-session-" + hex.EncodeToString(b[:])
}

// expireLocked drops the sessions idle past the bound and returns their
// ids for end.
func (t *sessionTable) expireLocked() []string {
	var ended []string
	cut := t.now().Add(-t.idle)
	for _, s := range t.byID {
		if len(s.streams) == 0 && s.last.Before(cut) {
			ended = append(ended, s.id)
			t.removeLocked(s)
			t.endedIdle.Add(1)
		}
	}
	return ended
}

// lruLocked is principal's least recently used session without an open
// stream (nil: every one has a stream).
func (t *sessionTable) lruLocked(principal string) *mcpSession {
	var v *mcpSession
	for _, s := range t.byID {
		if s.principal == principal && len(s.streams) == 0 && (v == nil || s.last.Before(v.last)) {
			v = s
		}
	}
	return v
}

// removeLocked forgets s and closes its streams.
func (t *sessionTable) removeLocked(s *mcpSession) {
	delete(t.byID, s.id)
	if t.per[s.principal]--; t.per[s.principal] <= 0 {
		delete(t.per, s.principal)
	}
	for _, cancel := range s.streams {
		cancel()
	}
	s.streams = nil
}

// endAll tells mcp-go to clean up the sessions the table dropped.
func (t *sessionTable) endAll(ids []string) {
	for _, id := range ids {
		if id != "" && t.end != nil {
			t.end(id)
		}
	}
}

// claim marks the reserved id as handed to mcp-go.
func (t *sessionTable) claim(id string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[id]
	if s != nil {
		s.claimed = true
	}
	return s != nil
}

// dropUnclaimed forgets a reservation mcp-go never used (an initialize it
// refused before minting a session).
func (t *sessionTable) dropUnclaimed(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byID[id]; s != nil && !s.claimed {
		t.removeLocked(s)
	}
}

var (
	errNoSession    = errors.New("no such session")
	errSessionIdle  = errors.New("session ended: idle")
	errOtherSession = errors.New("session of another principal")
)

// use checks that id is a live session of principal and marks it used; a
// session found idle past the bound ends now.
func (t *sessionTable) use(principal, id string) error {
	t.mu.Lock()
	s := t.byID[id]
	switch {
	case s == nil:
		t.mu.Unlock()
		return errNoSession
	case s.principal != principal:
		t.mu.Unlock()
		return errOtherSession
	case len(s.streams) == 0 && t.now().Sub(s.last) > t.idle:
		t.removeLocked(s)
		t.mu.Unlock()
		t.endedIdle.Add(1)
		t.endAll([]string{id})
		return errSessionIdle
	}
	s.last = t.now()
	t.mu.Unlock()
	return nil
}

// attach registers an open stream of session id (cancel ends it when the
// session ends) and returns its detach.
func (t *sessionTable) attach(principal, id string, cancel context.CancelFunc) (func(), error) {
	if err := t.use(principal, id); err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.byID[id]
	if s == nil {
		return nil, errNoSession
	}
	if s.streams == nil {
		s.streams = map[uint64]context.CancelFunc{}
	}
	s.next++
	k := s.next
	s.streams[k] = cancel
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if s.streams != nil {
			delete(s.streams, k)
			s.last = t.now()
		}
	}, nil
}

// close ends a session on its client's DELETE.
func (t *sessionTable) close(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byID[id]; s != nil {
		t.removeLocked(s)
		t.endedClosed.Add(1)
	}
}

// owner reports who holds session id ("" when nobody).
func (t *sessionTable) owner(id string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s := t.byID[id]; s != nil {
		return s.principal
	}
	return ""
}

// SessionStats is what /healthz says of MCP sessions.
type SessionStats struct {
	Live         int    `json:"live"`
	EndedIdle    uint64 `json:"ended_idle"`
	EndedEvicted uint64 `json:"ended_over_limit"`
	EndedClosed  uint64 `json:"ended_by_client"`
	Refused      uint64 `json:"refused"`
	// Unknown counts requests refused for a session id that is not the
	// caller's live session (never issued, ended, another principal's).
	Unknown uint64 `json:"unknown_refused"`
}

func (t *sessionTable) stats() SessionStats {
	t.mu.Lock()
	ended := t.expireLocked()
	live := len(t.byID)
	t.mu.Unlock()
	t.endAll(ended)
	return SessionStats{Live: live, EndedIdle: t.endedIdle.Load(), EndedEvicted: t.endedEvicted.Load(),
		EndedClosed: t.endedClosed.Load(), Refused: t.refused.Load(), Unknown: t.unknown.Load()}
}

// sessionResolver gives mcp-go a SessionIdManager bound to the request's
// principal and to the id admit reserved for it.
type sessionResolver struct{ t *sessionTable }

type reservedKey struct{}

func (r sessionResolver) ResolveSessionIdManager(req *http.Request) server.SessionIdManager {
	v := sessionView{t: r.t}
	if req != nil {
		if p := engine.PrincipalFrom(req.Context()); p != nil {
			v.principal = p.Name
		}
		v.reserved, _ = req.Context().Value(reservedKey{}).(string)
	}
	return v
}

// sessionView is the table as one request's principal sees it; without a
// principal (mcp-go's own cleanup) it may only terminate.
type sessionView struct {
	t         *sessionTable
	principal string
	reserved  string
}

// Generate hands mcp-go the id reserved for this initialize; without a
// reservation no session is made ("" is mcp-go's stateless answer).
func (v sessionView) Generate() string {
	if v.reserved != "" && v.t.claim(v.reserved) {
		return v.reserved
	}
	return ""
}

func (v sessionView) Validate(id string) (bool, error) {
	if v.principal == "" {
		return false, errNoSession
	}
	return false, v.t.use(v.principal, id)
}

func (v sessionView) Terminate(id string) (bool, error) {
	if v.principal != "" {
		if o := v.t.owner(id); o != "" && o != v.principal {
			return true, nil // another principal's session: not yours to end
		}
	}
	v.t.close(id)
	return false, nil
}
