package mcpserver

import (
	"errors"
	"net/http"
	"os"
	"time"
)

// DefaultWriteTimeout bounds how long a client may take nothing of a
// response: one that never reads held a page's memory (and the served-run
// room of a trace) for as long as it kept the connection open. Streams
// write at least every 25 s (keep-alives), so they live on.
const DefaultWriteTimeout = 30 * time.Second

// Writes gives every write of a response a deadline of the write timeout
// from that write (install it around the server's whole handler): a
// response its client takes nothing of for that long ends its connection,
// so the handler returns and gives back what it holds; the cut is counted
// (HTTPStats.ResponsesCut) and logged.
func (g *Guard) Writes(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tw := &timedWriter{ResponseWriter: w, rc: http.NewResponseController(w), g: g, r: r}
		tw.extend(true)
		h.ServeHTTP(tw, r)
		// The server writes what is buffered after the handler returns.
		tw.extend(true)
	})
}

// timedWriter moves its connection's write deadline before each write.
type timedWriter struct {
	http.ResponseWriter
	rc  *http.ResponseController
	g   *Guard
	r   *http.Request
	set time.Time // when the deadline was last moved
	cut bool
}

// extend moves the write deadline to the write timeout from now; soon
// after the last move (a thirtieth of the timeout) it keeps the deadline,
// so a page's many small writes need not each reset a timer.
func (w *timedWriter) extend(always bool) {
	now := time.Now()
	if !always && now.Sub(w.set) < w.g.writeTimeout/30 {
		return
	}
	w.set = now
	_ = w.rc.SetWriteDeadline(now.Add(w.g.writeTimeout))
}

func (w *timedWriter) WriteHeader(code int) {
	w.extend(false)
	w.ResponseWriter.WriteHeader(code)
}

func (w *timedWriter) Write(p []byte) (int, error) {
	w.extend(false)
	n, err := w.ResponseWriter.Write(p)
	w.check(err)
	return n, err
}

// Flush is for callers that assert http.Flusher (mcp-go's streams).
func (w *timedWriter) Flush() { _ = w.FlushError() }

// FlushError is what http.ResponseController.Flush calls.
func (w *timedWriter) FlushError() error {
	w.extend(false)
	err := w.rc.Flush()
	w.check(err)
	return err
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *timedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// check counts (and logs, the first and every 1000th) a response cut
// because its client took nothing of it within the write timeout.
func (w *timedWriter) check(err error) {
	if err == nil || w.cut || !errors.Is(err, os.ErrDeadlineExceeded) {
		return
	}
	w.cut = true
	if n := w.g.cutResponses.Add(1); n == 1 || n%1000 == 0 {
		w.g.log.Warn("closed a connection whose client took nothing of its response within the write timeout", "path", w.r.URL.Path,
			"timeout", w.g.writeTimeout, "remote", w.r.RemoteAddr, "responses_cut", n)
	}
}
