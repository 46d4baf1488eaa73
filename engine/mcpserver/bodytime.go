package mcpserver

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// DefaultBodyTimeout bounds the time a client has to send a request body,
// counted from the end of its headers (which http.Server bounds with
// ReadHeaderTimeout): the longest body (limits.max_request_bytes) at 100 KB/s.
const DefaultBodyTimeout = 10 * time.Second

type connKey struct{}

// ConnContext is the http.Server hook that lets the guard find a request's
// connection (install it with ConnState).
func (g *Guard) ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// Bodies bounds how long every request on the server may take to send its
// body (install it around the server's whole handler, before any auth
// check: an unauthenticated request's unread body is drained by net/http
// after the handler answers). While the body is arriving, the connection
// counts as waiting for limits.max_connections, so connections trickling
// bodies are closed first when the bound is reached, like silent ones. A
// body not there in time ends the connection (read deadline); a body the
// handler left unread does too, at once, instead of being drained. Requests
// without a body (the GET event streams) are not touched.
func (g *Guard) Bodies(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		c, _ := r.Context().Value(connKey{}).(net.Conn)
		if err := rc.SetReadDeadline(time.Now().Add(g.bodyTimeout)); err != nil {
			h.ServeHTTP(w, r)
			return
		}
		g.conns.receiving(c, true)
		// A body read to its end lifts the deadline; one left unread
		// (refused before reading) or failed (timed out) keeps a past one,
		// so net/http does not wait to drain it: the connection closes
		// after the answer.
		end := func(complete bool) {
			if complete {
				_ = rc.SetReadDeadline(time.Time{})
			} else {
				_ = rc.SetReadDeadline(time.Now().Add(-time.Second))
			}
			g.conns.receiving(c, false)
		}
		b := &timedBody{ReadCloser: r.Body, done: end, late: g.lateBody(r)}
		r.Body = b
		h.ServeHTTP(w, r)
		if !b.ended {
			end(false)
		}
	})
}

// timedBody calls done once, when the body has been read to its end
// (true) or its reading failed (false).
type timedBody struct {
	io.ReadCloser
	done  func(complete bool)
	late  func()
	ended bool
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !b.ended {
		b.ended = true
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = errors.New("the request body did not arrive in time")
			b.late()
		}
		b.done(err == io.EOF)
	}
	return n, err
}

// receiving marks c as receiving a request body (waiting for the client,
// as far as the connection bound is concerned) or done with it.
func (l *connLimit) receiving(c net.Conn, on bool) {
	if c == nil {
		return
	}
	l.mu.Lock()
	if cs := l.conns[c]; cs != nil {
		cs.body, cs.since = on, time.Now()
	}
	l.mu.Unlock()
}

// lateBody counts (and logs, the first and every 1000th) a body that did
// not arrive within the body timeout.
func (g *Guard) lateBody(r *http.Request) func() {
	return func() {
		if n := g.lateBodies.Add(1); n == 1 || n%1000 == 0 {
			g.log.Warn("closed a connection whose request body did not arrive in time", "path", r.URL.Path,
				"timeout", g.bodyTimeout, "remote", r.RemoteAddr, "late_bodies", n)
		}
	}
}
