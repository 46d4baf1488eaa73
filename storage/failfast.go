package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
)

// A request (an MCP tool call, a web UI action) may make several writes: a
// deploy stores its program and rule, then its run record, then its
// idempotency record. With the database locked each used to wait the busy
// timeout in turn, and first for the writer connection, which a background
// writer (the firing recorder, the health probe) held while it waited out
// the same lock: a deploy by program_ref took 33.9 s to fail. Under a
// FailFast context a request's writes are bounded instead:
//
//   - a write waits for the writer connection at most the busy timeout;
//   - once one write of the request failed because the database could not
//     serve, every later write of it fails at once with that error.
//
// So a request that meets a locked database fails within about twice the
// busy timeout, whatever it would have written.

type failFastKey struct{}

// failFast is one request's storage state: the first fault it met.
type failFast struct{ err atomic.Pointer[error] }

// FailFast marks ctx as one request's (see above). Marking a marked
// context again keeps its state.
func FailFast(ctx context.Context) context.Context {
	if ctx.Value(failFastKey{}) != nil {
		return ctx
	}
	return context.WithValue(ctx, failFastKey{}, &failFast{})
}

func failFastOf(ctx context.Context) *failFast {
	if ctx == nil {
		return nil
	}
	ff, _ := ctx.Value(failFastKey{}).(*failFast)
	return ff
}

// noteFault records a request's first storage fault.
func noteFault(ctx context.Context, err error) {
	if ff := failFastOf(ctx); ff != nil {
		ff.err.CompareAndSwap(nil, &err)
	}
}

// writer returns the writer connection for a write called what (release
// it with Close). Under a FailFast context it fails at once after an
// earlier fault of the request, and waits at most the busy timeout for the
// connection; either failure is ErrUnavailable, and neither counts against
// the database's write status (the database itself was not tried).
func (s *Store) writer(ctx context.Context, what string) (*sql.Conn, error) {
	ff := failFastOf(ctx)
	if ff == nil {
		return s.w.Conn(ctx)
	}
	if prev := ff.err.Load(); prev != nil {
		return nil, &faultError{fmt.Errorf("storage: %s: not tried, an earlier write of this request failed: %w", what, *prev)}
	}
	wctx, cancel := context.WithTimeout(ctx, s.busy)
	defer cancel()
	c, err := s.w.Conn(wctx)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		err = &faultError{fmt.Errorf("storage: %s: the database writer stayed busy for %v (another write is waiting for the database: is it locked?)", what, s.busy)}
		noteFault(ctx, err)
	}
	return c, err
}
