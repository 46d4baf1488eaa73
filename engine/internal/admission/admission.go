// Package admission admits test runs before they run: a few in flight per
// principal and in all, and only while what the principal keeps stored
// leaves room for what the run may store.
package admission

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/clocktext"
	"github.com/pilothouse/pilothouse/internal/shown"
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

// A test run may burn its whole real-time bound (a loop of costly
// templates): an attacker round ran 40 at once as a guest, and /healthz,
// lookups and firings waited seconds. So test runs in flight are bounded
// per principal and in all; one beyond is refused at once (a request
// error, resource_exhausted) rather than queued. Principals who are not
// administrators take at most maxGuests of them together, so two guests
// running two each cannot keep the owner from testing (attacker round
// 20).
const (
	MaxPerPrincipal = 2
	maxInAll        = 4
	maxGuests       = maxInAll - 1
)

// Config is what admission needs from the engine.
type Config struct {
	// MaxStoredRuns, MaxStoredBytes and RunBytes are
	// limits.max_stored_test_runs, max_stored_test_bytes and max_run_bytes.
	MaxStoredRuns            int
	MaxStoredBytes, RunBytes int64
	// Retention is the declared retention, as the manifest writes it.
	Retention string
	// Zone is the house's, for the times a message names.
	Zone *time.Location
	// Unavailable is the request error for storage that cannot answer.
	Unavailable func(what, catalogVersion string) error
}

// Gate admits test runs; store may be nil (nothing is stored).
type Gate struct {
	cfg   Config
	store *storage.Store
	log   *slog.Logger

	mu      sync.Mutex
	holds   map[string]hold // principal → its test runs in flight that will store
	running map[string]int  // principal → its test runs in flight
	guests  int             // test runs in flight of principals not administrators
}

// hold is what a principal's test runs in flight may still store: they
// count against the bounds until recorded.
type hold struct {
	runs  int
	bytes int64
}

// New returns a gate over store.
func New(cfg Config, store *storage.Store, log *slog.Logger) *Gate {
	return &Gate{cfg: cfg, store: store, log: log, holds: map[string]hold{}, running: map[string]int{}}
}

// Run is a test run asking to be admitted.
type Run struct {
	Principal string
	// Admin: the principal is an administrator (sees the whole house).
	Admin bool
	// Stores: its record would be stored; Keyed: it has an idempotency key
	// (whose record is stored either way).
	Stores, Keyed  bool
	CatalogVersion string
}

// Admit takes a test run's slot and the room it may store; the returned
// release gives both back once the run is recorded (or refused).
func (g *Gate) Admit(ctx context.Context, r Run) (func(), error) {
	slot, err := g.holdSlot(r)
	if err != nil {
		return nil, err
	}
	room, err := g.holdStorage(ctx, r)
	if err != nil {
		slot()
		return nil, err
	}
	return func() { room(); slot() }, nil
}

// InFlight is how many test runs of principal are in flight.
func (g *Gate) InFlight(principal string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running[principal]
}

// holdStorage checks the principal's stored test runs before a test run
// that would store something and holds room for it.
func (g *Gate) holdStorage(ctx context.Context, r Run) (func(), error) {
	if g.store == nil || (!r.Stores && !r.Keyed) {
		return func() {}, nil
	}
	maxRuns, maxBytes, runBytes := g.cfg.MaxStoredRuns, g.cfg.MaxStoredBytes, g.cfg.RunBytes
	g.mu.Lock()
	defer g.mu.Unlock()
	u, err := g.store.StoredUsage(ctx, r.Principal)
	switch {
	case errors.Is(err, storage.ErrUnavailable):
		g.log.Warn("reading a principal's stored test runs failed; the test run was refused", "principal", r.Principal, "err", err)
		return nil, g.cfg.Unavailable("the stored test runs could not be counted, so the test run did not run (pass store: false to run without storing)", r.CatalogVersion)
	case err != nil:
		return nil, fmt.Errorf("engine: stored test runs of %s: %w", r.Principal, err)
	}
	h := g.holds[r.Principal]
	over := ""
	switch {
	case r.Stores && u.TestRuns+h.runs >= maxRuns:
		over = fmt.Sprintf("keeps %d stored test runs, the most one principal may (limits.max_stored_test_runs)", u.TestRuns+h.runs)
	case u.Bytes+h.bytes+runBytes > maxBytes:
		over = fmt.Sprintf("keeps %d bytes of stored test runs and idempotency records; with the %d this run may store (limits.max_run_bytes) that passes limits.max_stored_test_bytes (%d)", u.Bytes+h.bytes, runBytes, maxBytes)
	}
	if over != "" {
		return nil, &pilotage.RequestError{Kind: pilotage.ErrResourceExhausted, CatalogVersion: r.CatalogVersion,
			Message: fmt.Sprintf("principal %s %s. Stored runs are kept for the whole retention period (%s)%s. Pass store: false (and no idempotency_key) to test without storing; nothing ran.",
				shown.Quote(r.Principal), over, g.cfg.Retention, oldestNote(u.OldestExpires, g.cfg.Zone))}
	}
	if r.Stores {
		h.runs++
	}
	h.bytes += runBytes
	g.holds[r.Principal] = h
	return func() { g.release(r.Principal, r.Stores, runBytes) }, nil
}

func (g *Gate) release(principal string, stores bool, bytes int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	h := g.holds[principal]
	if stores {
		h.runs--
	}
	h.bytes -= bytes
	if h.runs <= 0 && h.bytes <= 0 {
		delete(g.holds, principal)
		return
	}
	g.holds[principal] = h
}

func oldestNote(t time.Time, zone *time.Location) string {
	if t.IsZero() {
		return ""
	}
	return ": the oldest expires at " + clocktext.Text(t, zone)
}

// holdSlot takes one of the principal's slots for a test run in flight.
func (g *Gate) holdSlot(r Run) (func(), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	all := 0
	for _, n := range g.running {
		all += n
	}
	mine := g.running[r.Principal]
	if mine >= MaxPerPrincipal || all >= maxInAll || (!r.Admin && g.guests >= maxGuests) {
		return nil, &pilotage.RequestError{Kind: pilotage.ErrResourceExhausted, CatalogVersion: r.CatalogVersion,
			Message: fmt.Sprintf("%d test runs are in flight (%d of principal %s): at most %d per principal and %d in all run at once, of which principals who are not administrators take %d. Retry when one has ended; nothing ran.",
				all, mine, shown.Quote(r.Principal), MaxPerPrincipal, maxInAll, maxGuests)}
	}
	g.running[r.Principal] = mine + 1
	if !r.Admin {
		g.guests++
	}
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.running[r.Principal]--; g.running[r.Principal] == 0 {
			delete(g.running, r.Principal)
		}
		if !r.Admin {
			g.guests--
		}
	}, nil
}
