package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

// Stored test runs are bounded per principal. Firings are trimmed per rule,
// deploys need the deploy right, but any principal, a read-only guest
// included, could store test runs without end, and large envelopes grow
// the data folder fast (figures: docs/performance.md). They cannot be
// trimmed early: the Language declares a retention, and a run stored under
// it "MUST be retrievable ... for at least the declared duration" (spec
// §6.6). So a test run that would be stored is refused before it runs (a
// request error, resource_exhausted) when the principal keeps
// limits.max_stored_test_runs test runs, or when what it keeps stored (test
// runs and idempotency records) plus what this run may store
// (limits.max_run_bytes) passes limits.max_stored_test_bytes. A test run
// with store: false and no idempotency key stores nothing and always runs.

// testHold is what a principal's test runs in flight may still store: they
// count against the bounds until recorded.
type testHold struct {
	runs  int
	bytes int64
}

// holdTestStorage checks the principal's stored test runs before a test
// run that would store something and holds room for it; the returned
// release gives the room back once the run is recorded (or refused).
func (e *Engine) holdTestStorage(ctx context.Context, p *Principal, req ExecuteRequest, catalogVersion string) (func(), error) {
	stores := req.Store == nil || *req.Store
	if !req.TestRun || e.store == nil || (!stores && req.IdempotencyKey == "") {
		return func() {}, nil
	}
	lim := e.cfg.Limits
	maxRuns, maxBytes, runBytes := lim.MaxStoredTestRuns, int64(lim.MaxStoredTestBytes), int64(lim.MaxRunBytes)
	e.holdMu.Lock()
	defer e.holdMu.Unlock()
	u, err := e.store.StoredUsage(ctx, p.Name)
	switch {
	case errors.Is(err, storage.ErrUnavailable):
		e.log.Warn("reading a principal's stored test runs failed; the test run was refused", "principal", p.Name, "err", err)
		return nil, storageRequestError("the stored test runs could not be counted, so the test run did not run (pass store: false to run without storing)", catalogVersion)
	case err != nil:
		return nil, fmt.Errorf("engine: stored test runs of %s: %w", p.Name, err)
	}
	h := e.holds[p.Name]
	over := ""
	switch {
	case stores && u.TestRuns+h.runs >= maxRuns:
		over = fmt.Sprintf("keeps %d stored test runs, the most one principal may (limits.max_stored_test_runs)", u.TestRuns+h.runs)
	case u.Bytes+h.bytes+runBytes > maxBytes:
		over = fmt.Sprintf("keeps %d bytes of stored test runs and idempotency records; with the %d this run may store (limits.max_run_bytes) that passes limits.max_stored_test_bytes (%d)", u.Bytes+h.bytes, runBytes, maxBytes)
	}
	if over != "" {
		return nil, &pilotage.RequestError{Kind: pilotage.ErrResourceExhausted, CatalogVersion: catalogVersion,
			Message: fmt.Sprintf("principal %s %s. Stored runs are kept for the whole retention period (%s)%s. Pass store: false (and no idempotency_key) to test without storing; nothing ran.",
				quote(p.Name), over, e.cfg.RetentionText(), oldestNote(u.OldestExpires))}
	}
	if stores {
		h.runs++
	}
	h.bytes += runBytes
	e.holds[p.Name] = h
	return func() { e.releaseHold(p.Name, stores, runBytes) }, nil
}

func (e *Engine) releaseHold(principal string, stores bool, bytes int64) {
	e.holdMu.Lock()
	defer e.holdMu.Unlock()
	h := e.holds[principal]
	if stores {
		h.runs--
	}
	h.bytes -= bytes
	if h.runs <= 0 && h.bytes <= 0 {
		delete(e.holds, principal)
		return
	}
	e.holds[principal] = h
}

func oldestNote(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return ": the oldest expires at " + t.UTC().Format(time.RFC3339)
}

// A test run may burn its whole real-time bound (a loop of costly
// templates): an attacker round ran 40 at once as a guest, and /healthz,
// lookups and firings waited seconds. So test runs in flight are bounded
// per principal and in all; one beyond is refused at once (a request
// error, resource_exhausted) rather than queued.
const (
	maxTestRunsPerPrincipal = 2
	maxTestRunsInAll        = 4
)

// holdTestSlot takes one of the principal's slots for a test run in
// flight; the returned release gives it back.
func (e *Engine) holdTestSlot(p *Principal, req ExecuteRequest, catalogVersion string) (func(), error) {
	if !req.TestRun {
		return func() {}, nil
	}
	e.holdMu.Lock()
	defer e.holdMu.Unlock()
	if e.running == nil {
		e.running = map[string]int{}
	}
	all := 0
	for _, n := range e.running {
		all += n
	}
	mine := e.running[p.Name]
	if mine >= maxTestRunsPerPrincipal || all >= maxTestRunsInAll {
		return nil, &pilotage.RequestError{Kind: pilotage.ErrResourceExhausted, CatalogVersion: catalogVersion,
			Message: fmt.Sprintf("%d test runs are in flight (%d of principal %s): at most %d per principal and %d in all run at once. Retry when one has ended; nothing ran.",
				all, mine, quote(p.Name), maxTestRunsPerPrincipal, maxTestRunsInAll)}
	}
	e.running[p.Name] = mine + 1
	return func() {
		e.holdMu.Lock()
		defer e.holdMu.Unlock()
		if e.running[p.Name]--; e.running[p.Name] == 0 {
			delete(e.running, p.Name)
		}
	}, nil
}

// holdTest takes a test run's slot and the room it may store.
func (e *Engine) holdTest(ctx context.Context, p *Principal, req ExecuteRequest, catalogVersion string) (func(), error) {
	slot, err := e.holdTestSlot(p, req, catalogVersion)
	if err != nil {
		return nil, err
	}
	room, err := e.holdTestStorage(ctx, p, req, catalogVersion)
	if err != nil {
		slot()
		return nil, err
	}
	return func() { room(); slot() }, nil
}
