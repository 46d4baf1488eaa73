package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
	"golang.org/x/sync/semaphore"
)

// servedWait is how long a read of a stored run waits for room under
// limits.MaxServedRunBytes before it is refused.
const servedWait = 2 * time.Second

// servedGate bounds the bytes of stored run records being served at once
// (pilotage_trace, the web UI's run page and run JSON). Serving a run costs
// several times its record (decoded, encoded, copied into the response), so
// without a bound a few hundred parallel reads of one 4 MB run took
// gigabytes. A read holds its record's size from before it reads the record
// until its response is written (ServingRuns), else until Trace returns.
type servedGate struct {
	sem      *semaphore.Weighted
	max      int64
	inFlight atomic.Int64
	refused  atomic.Uint64
}

func newServedGate(max int) *servedGate {
	return &servedGate{sem: semaphore.NewWeighted(int64(max)), max: int64(max)}
}

type servingKey struct{}

// serving collects the holds taken while one response is being built.
type serving struct {
	mu       sync.Mutex
	releases []func()
}

// ServingRuns returns a context under which the stored runs read (Trace)
// stay counted against limits.MaxServedRunBytes until done is called: call
// it once the response is written, so the bound covers the encoding too.
func ServingRuns(ctx context.Context) (_ context.Context, done func()) {
	s := &serving{}
	return context.WithValue(ctx, servingKey{}, s), func() {
		s.mu.Lock()
		rs := s.releases
		s.releases = nil
		s.mu.Unlock()
		for _, r := range rs {
			r()
		}
	}
}

// ServedStats are the served-run bound's counters, for /healthz.
type ServedStats struct {
	InFlightBytes int64  `json:"in_flight_bytes"`
	MaxBytes      int64  `json:"max_bytes"`
	Refused       uint64 `json:"refused"`
}

// ServedStats returns the served-run bound's counters.
func (e *Engine) ServedStats() ServedStats {
	g := e.served
	return ServedStats{InFlightBytes: g.inFlight.Load(), MaxBytes: g.max, Refused: g.refused.Load()}
}

// holdServed takes room for run id's record before it is read (its size
// is read first, scoped to p like the record itself); release gives it
// back, or is a no-op when ctx defers it to ServingRuns' done. A run that
// does not exist (for p) takes nothing: the caller's read says not found.
func (e *Engine) holdServed(ctx context.Context, p *Principal, id string) (release func(), err error) {
	nop := func() {}
	if e.store == nil {
		return nop, nil
	}
	owner := p.Name
	if p.Admin {
		owner = ""
	}
	size, err := e.store.RunSize(ctx, id, owner)
	if errors.Is(err, storage.ErrNotFound) {
		return nop, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: reading run: %w", err)
	}
	g := e.served
	n := min(max(size, 1), g.max)
	wctx, cancel := context.WithTimeout(ctx, servedWait)
	defer cancel()
	if err := g.sem.Acquire(wctx, n); err != nil {
		if c := g.refused.Add(1); c == 1 || c%100 == 0 {
			e.log.Warn("refused to serve a stored run: limits.max_served_run_bytes are in use by other reads", "run", id,
				"bytes", size, "limit", g.max, "refused", c)
		}
		return nil, pilotage.Errorf(pilotage.ErrResourceExhausted, fmt.Sprintf(
			"the server is busy serving other stored runs (%d bytes at once at most, limits.max_served_run_bytes; this one is %d bytes): try again in a few seconds", g.max, size))
	}
	g.inFlight.Add(n)
	var once sync.Once
	release = func() {
		once.Do(func() {
			g.inFlight.Add(-n)
			g.sem.Release(n)
		})
	}
	if s, ok := ctx.Value(servingKey{}).(*serving); ok {
		s.mu.Lock()
		s.releases = append(s.releases, release)
		s.mu.Unlock()
		return nop, nil
	}
	return release, nil
}
