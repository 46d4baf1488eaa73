package mcpserver

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// streamLimit bounds the event streams held open (MCP's GET /mcp and its
// subscriptions/listen POST, the web UI's /events), per principal and in
// all: each holds a connection, a goroutine or two and buffers for as long
// as the client wants, so 20,000 of them took every file descriptor.
type streamLimit struct {
	maxTotal, maxPer int

	mu    sync.Mutex
	open  map[string]int // principal → open streams
	total int

	refusedPer, refusedTotal atomic.Uint64
}

// openStream takes a stream slot for principal, or returns the HTTP status
// and message of the refusal.
func (l *streamLimit) openStream(principal string) (release func(), code int, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.open[principal] >= l.maxPer:
		l.refusedPer.Add(1)
		return nil, http.StatusTooManyRequests, fmt.Sprintf("Too many open event streams: principal %q holds %d, the most one principal may (limits.max_streams_per_principal). Close one (a browser tab, an MCP client's session) and retry.", principal, l.open[principal])
	case l.total >= l.maxTotal:
		l.refusedTotal.Add(1)
		return nil, http.StatusServiceUnavailable, fmt.Sprintf("Too many open event streams: the server holds %d, the most it serves at once (limits.max_streams). Retry later.", l.total)
	}
	l.open[principal]++
	l.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.total--
			if l.open[principal]--; l.open[principal] <= 0 {
				delete(l.open, principal)
			}
		})
	}, 0, ""
}

// OpenStream takes one of the bounded event-stream slots for principal
// before a handler starts a long-lived response. When none is left it
// answers 429 (the principal's share is used) or 503 (the server's), with
// the reason, closes the connection (a refused flood must not keep its
// sockets) and returns false. The caller must call release when the
// stream ends.
func (g *Guard) OpenStream(w http.ResponseWriter, r *http.Request, principal string) (release func(), ok bool) {
	release, code, msg := g.streams.openStream(principal)
	if release != nil {
		return release, true
	}
	per, total := g.streams.refusedPer.Load(), g.streams.refusedTotal.Load()
	if n := per + total; n == 1 || n%1000 == 0 {
		g.log.Warn("refused an event stream over the stream limits", "path", r.URL.Path, "principal", principal,
			"status", code, "remote", r.RemoteAddr, "refused_per_principal", per, "refused_total", total)
	}
	w.Header().Set("Retry-After", "5")
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
	return nil, false
}

// connLimit bounds the HTTP connections open at once (http.Server's
// ConnState hook). Past the bound, a new connection closes the connection
// that has waited longest without a request in progress (idle between
// requests, silent since it connected, or trickling a request body); only when every connection is
// serving a request is the new one closed instead. So a flood of silent or
// idle sockets cannot lock out /healthz or a real client, and the process
// never runs out of file descriptors.
type connLimit struct {
	max int

	mu    sync.Mutex
	conns map[net.Conn]*connState

	shed, refused atomic.Uint64
}

type connState struct {
	state http.ConnState
	body  bool // a request's body is arriving (Guard.Bodies): waiting on the client
	since time.Time
}

// ConnState is the http.Server hook bounding open connections by
// limits.max_connections. Install it on the server that serves the guard's
// handlers.
func (g *Guard) ConnState(c net.Conn, st http.ConnState) {
	l := &g.conns
	l.mu.Lock()
	switch st {
	case http.StateNew:
		l.conns[c] = &connState{state: st, since: time.Now()}
		if len(l.conns) > l.max {
			victim := l.oldestWaiting(c)
			if victim == nil {
				victim = c
				l.refused.Add(1)
			} else {
				l.shed.Add(1)
			}
			delete(l.conns, victim)
			l.mu.Unlock()
			_ = victim.Close()
			g.logConns()
			return
		}
	case http.StateActive, http.StateIdle:
		if cs := l.conns[c]; cs != nil {
			cs.state, cs.since = st, time.Now()
		}
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
	}
	l.mu.Unlock()
}

// oldestWaiting is the connection other than except that has waited
// longest without a request in progress (nil: every one is busy).
func (l *connLimit) oldestWaiting(except net.Conn) net.Conn {
	var victim net.Conn
	var since time.Time
	for c, cs := range l.conns {
		if c == except || (cs.state == http.StateActive && !cs.body) {
			continue
		}
		if victim == nil || cs.since.Before(since) {
			victim, since = c, cs.since
		}
	}
	return victim
}

func (g *Guard) logConns() {
	shed, refused := g.conns.shed.Load(), g.conns.refused.Load()
	if n := shed + refused; n == 1 || n%1000 == 0 {
		g.log.Warn("closed connections over limits.max_connections", "limit", g.conns.max,
			"closed_waiting", shed, "refused_new", refused)
	}
}

// HTTPStats is what the guard counts, for /healthz: refusals by reason and
// what is open now.
type HTTPStats struct {
	Connections        int    `json:"connections"`
	ConnectionsClosed  uint64 `json:"connections_closed_over_limit"`
	ConnectionsRefused uint64 `json:"connections_refused"`
	Streams            int    `json:"streams"`
	StreamsRefused     uint64 `json:"streams_refused"`
	HostsRefused       uint64 `json:"hosts_refused"`
	BodiesRefused      uint64 `json:"bodies_refused"`
	BodiesLate         uint64 `json:"bodies_late"` // closed: the body did not arrive within the body timeout
	// ResponsesCut: connections closed because their client took nothing
	// of a response within the write timeout (Writes).
	ResponsesCut uint64 `json:"responses_cut"`
	// BearerFailed counts wrong tokens at every door that shares the
	// allowance (/mcp, the house API, the web login, the approvals API);
	// BearerThrottled attempts refused (429) after too many from their
	// address.
	BearerFailed    uint64 `json:"bearer_tokens_failed"`
	BearerThrottled uint64 `json:"bearer_tokens_throttled"`
}

// Stats returns the guard's counters.
func (g *Guard) Stats() HTTPStats {
	g.conns.mu.Lock()
	conns := len(g.conns.conns)
	g.conns.mu.Unlock()
	g.streams.mu.Lock()
	streams := g.streams.total
	g.streams.mu.Unlock()
	hosts, bodies := g.Refused()
	st := HTTPStats{Connections: conns, ConnectionsClosed: g.conns.shed.Load(), ConnectionsRefused: g.conns.refused.Load(),
		Streams: streams, StreamsRefused: g.streams.refusedPer.Load() + g.streams.refusedTotal.Load(),
		HostsRefused: hosts, BodiesRefused: bodies, BodiesLate: g.lateBodies.Load(), ResponsesCut: g.cutResponses.Load(),
	}
	st.BearerFailed, st.BearerThrottled = g.tokens.Counts()
	return st
}
