package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sort"

	"github.com/mark3labs/mcp-go/server"

	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

func (s *Server) limits() rules.Limits { return s.lim }

// jsonArgs are the arguments that carry JSON documents rather than
// scalars: input and context are bounded by InputTooLarge, the program by
// the validator (MaxProgramBytes, its own resource_exhausted message).
var jsonArgs = map[string]bool{"input": true, "context": true, "program": false}

// InputTooLarge is the request error for an execute input (or context)
// over limits.max_input_bytes, or nil: what every way into execute checks
// before the engine runs and stores anything (a run keeps its input for
// the retention period). Nothing is truncated.
func InputTooLarge(lim rules.Limits, arg string, raw []byte) error {
	limit := lim.WithDefaults().MaxInputBytes
	if len(raw) <= limit {
		return nil
	}
	return pilotage.Errorf(pilotage.ErrResourceExhausted,
		fmt.Sprintf("argument %s is JSON of %d bytes, more than the bound of %d (limits.max_input_bytes)", shown.Quote(arg), len(raw), limit))
}

// checkArgSizes bounds every argument of a tool call before any handler
// work: string and scalar arguments by MaxArgBytes (a 10 MB lookup q costs
// seconds of matching, a 100 MB id gigabytes of copies), input and context
// by MaxInputBytes (a run stores its input for the retention period). The
// error names the argument, its size and the bound.
func (s *Server) checkArgSizes(args map[string]json.RawMessage) error {
	names := make([]string, 0, len(args))
	for k := range args {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		raw := args[k]
		if bounded, ok := jsonArgs[k]; ok {
			if err := InputTooLarge(s.lim, k, raw); bounded && err != nil {
				return err
			}
			continue
		}
		size, limit := len(raw), s.lim.MaxArgBytes
		if len(raw) > 0 && raw[0] == '"' && len(raw) > limit {
			var v string
			if json.Unmarshal(raw, &v) == nil {
				size = len(v)
			}
		}
		if size > limit {
			return pilotage.Errorf(pilotage.ErrResourceExhausted,
				fmt.Sprintf("argument %s is %d bytes, more than the bound of %d (limits.max_arg_bytes)", shown.Quote(k), size, limit))
		}
	}
	return nil
}

// ServeStdio serves MCP over stdio (newline-delimited JSON-RPC) until in
// ends or ctx is cancelled. mcp-go reads a whole line however long it is:
// lines are bounded here by MaxRequestBytes. An oversize line is discarded
// as it streams in (memory stays at the bound) and answered like any
// unparseable line, with a JSON-RPC parse error; the session goes on.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.Serve(ctx, LimitLines(in, s.lim.MaxRequestBytes, s.log), out)
}

// Serve serves MCP over stdio from lines the caller has bounded already
// (LimitLines).
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	return server.NewStdioServer(s.MCP).Listen(ctx, in, out)
}

// LimitLines bounds the lines read from in at max bytes (newline
// excluded): a longer line is cut at max and made unparseable (a NUL
// follows), the rest of it skipped as it streams in, and a warning logged.
// Whatever reads JSON-RPC lines from a client (stdio, the stdio bridge)
// reads through it.
func LimitLines(in io.Reader, max int, log *slog.Logger) io.Reader {
	return &lineLimiter{r: in, max: max, onDrop: func() {
		log.Warn("stdio: discarded a message over limits.max_request_bytes (answered with a parse error)", "limit", max)
	}}
}

// lineLimiter passes lines of at most max bytes (newline excluded) through;
// a longer line is cut at max, followed by a NUL (so what was passed on can
// never parse as a message) and its newline, and the rest of it is skipped.
type lineLimiter struct {
	r       io.Reader
	max     int
	n       int    // bytes of the current line passed on
	skip    bool   // inside an oversize line's rest
	pending []byte // output owed before anything else
	rest    []byte // input read but not yet filtered
	restErr error  // the error that came with rest
	onDrop  func()
}

func (l *lineLimiter) Read(p []byte) (int, error) {
	for {
		if len(l.pending) > 0 {
			n := copy(p, l.pending)
			l.pending = l.pending[n:]
			return n, nil
		}
		var in []byte
		var err error
		fromRest := len(l.rest) > 0 || l.restErr != nil
		if fromRest {
			in, err, l.rest, l.restErr = l.rest, l.restErr, nil, nil
		} else {
			n, rerr := l.r.Read(p)
			in, err = p[:n], rerr
		}
		out, used := l.filter(p, in)
		if used < len(in) {
			if fromRest {
				l.rest = in[used:]
			} else {
				l.rest = append([]byte(nil), in[used:]...)
			}
			l.restErr, err = err, nil
		}
		if out > 0 || err != nil {
			return out, err
		}
	}
}

// filter copies in to dst (which in may alias: it never writes ahead of
// what it has read), cutting oversize lines; it stops at a cut so that the
// cut's NUL and newline come before the next line.
func (l *lineLimiter) filter(dst, in []byte) (out, used int) {
	for used < len(in) && out < len(dst) {
		c := in[used]
		used++
		switch {
		case c == '\n':
			if !l.skip {
				dst[out] = c
				out++
			}
			l.skip, l.n = false, 0
		case l.skip:
		case l.n == l.max:
			l.skip = true
			l.pending = []byte{0, '\n'}
			if l.onDrop != nil {
				l.onDrop()
			}
			return out, used
		default:
			dst[out] = c
			out++
			l.n++
		}
	}
	return out, used
}
