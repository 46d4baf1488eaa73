package storage

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// ErrUnavailable marks a failure of the database itself — locked by
// another process past the busy timeout, disk full, read-only, an I/O
// error — as opposed to a record the store refused or did not find
// (ErrInvalid, ErrConflict, ErrNotFound). Callers test it with errors.Is;
// the error's text is the driver's.
var ErrUnavailable = errors.New("storage: unavailable")

// faultError is a database failure: its text, and Is ErrUnavailable.
type faultError struct{ err error }

func (f *faultError) Error() string   { return f.err.Error() }
func (f *faultError) Unwrap() []error { return []error{f.err, ErrUnavailable} }

// isFault reports whether err is a failure of the database rather than a
// refused record or a caller that gave up.
func isFault(ctx context.Context, err error) bool {
	switch {
	case err == nil, errors.Is(err, ErrNotFound), errors.Is(err, ErrConflict), errors.Is(err, ErrInvalid),
		errors.Is(err, ErrSchemaTooNew), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return false
	}
	return ctx == nil || ctx.Err() == nil
}

// fault marks a database failure as ErrUnavailable (reads).
func (s *Store) fault(ctx context.Context, err error) error {
	if !isFault(ctx, err) || errors.Is(err, ErrUnavailable) {
		return err
	}
	return &faultError{err}
}

// WriteStatus says whether the database accepts writes: a failed write
// flips it, the next successful one (a probe retries every probeEvery
// meanwhile) flips it back.
type WriteStatus struct {
	OK bool `json:"ok"`
	// Error is the latest failure, Since the first of the current streak.
	Error string    `json:"error,omitempty"`
	Since time.Time `json:"since,omitzero"`
	// Failures counts failed writes since the store opened.
	Failures uint64 `json:"failures"`
}

// probeEvery is how often a failing store tries a write of its own, so
// that its status recovers without waiting for the next real write.
const probeEvery = 3 * time.Second

// writeHealth tracks WriteStatus. A write that succeeds while nothing is
// failing costs one atomic load.
type writeHealth struct {
	failing atomic.Bool
	mu      sync.Mutex
	st      WriteStatus // Error, Since, Failures
	probing bool
	ctx     context.Context // cancelled by Close: ends the probe
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

func (h *writeHealth) init() {
	h.ctx, h.cancel = context.WithCancel(context.Background())
}

// WriteStatus returns the database's write status.
func (s *Store) WriteStatus() WriteStatus {
	s.health.mu.Lock()
	defer s.health.mu.Unlock()
	st := s.health.st
	st.OK = !s.health.failing.Load()
	if st.OK {
		st.Error, st.Since = "", time.Time{}
	}
	return st
}

// wrote records the result of a write and returns err, marked
// ErrUnavailable when the database failed.
func (s *Store) wrote(ctx context.Context, err error) error {
	h := &s.health
	if err == nil {
		if h.failing.Load() {
			h.mu.Lock()
			h.failing.Store(false)
			h.mu.Unlock()
		}
		return nil
	}
	if !isFault(ctx, err) {
		return err
	}
	h.mu.Lock()
	if !h.failing.Load() {
		h.st.Since = time.Now()
	}
	h.failing.Store(true)
	h.st.Error = err.Error()
	h.st.Failures++
	if !h.probing && h.ctx != nil && h.ctx.Err() == nil {
		h.probing = true
		h.wg.Add(1)
		go s.probe()
	}
	h.mu.Unlock()
	noteFault(ctx, err)
	return s.fault(ctx, err)
}

// probe writes a marker every probeEvery while writes fail, until one
// succeeds or the store closes.
func (s *Store) probe() {
	h := &s.health
	defer h.wg.Done()
	t := time.NewTicker(probeEvery)
	defer t.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-t.C:
		}
		h.mu.Lock()
		if !h.failing.Load() {
			h.probing = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		_ = s.SetMeta(h.ctx, "write_probe", time.Now().UTC().Format(time.RFC3339Nano))
	}
}

// stopProbe ends a running probe (Close).
func (h *writeHealth) stopProbe() {
	if h.cancel != nil {
		h.cancel()
	}
	h.wg.Wait()
}
