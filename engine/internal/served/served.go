// Package served bounds the memory of stored run records and execute
// answers being served at once (limits.MaxServedRunBytes).
package served

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// wait is how long a read of a stored run (or an answer) waits for room
// under limits.MaxServedRunBytes before it is refused.
const wait = 2 * time.Second

// Gate bounds the memory of stored run records being served at once
// (pilotage_trace, the web UI's run page and run JSON) and of execute
// answers (test runs, deploys). Serving a run costs many times its record
// (decoded, encoded, copied into the response), so without a bound a few
// hundred parallel reads of one 4 MB run took gigabytes, and 180 unread
// 4 MB test-run answers 2.4 GB. A read holds what it costs (its caller's
// estimate) from before it reads the record, an answer from once it is
// built, until the response is written (ServingRuns), else until the
// engine's call returns.
type Gate struct {
	sem *semaphore.Weighted
	// guests bounds the reads of principals who see only their own runs
	// to half of max together, so a guest holding reads open cannot keep
	// the owner from reading a trace.
	guests   *semaphore.Weighted
	max      int64
	inFlight atomic.Int64
	refused  atomic.Uint64
}

// New makes a gate of max bytes.
func New(bytes int) *Gate {
	m := int64(bytes)
	g := &Gate{sem: semaphore.NewWeighted(m), max: m}
	g.guests = semaphore.NewWeighted(g.half())
	return g
}

// half is half of the gate: what one hold, and the guests' holds
// together, take at most.
func (g *Gate) half() int64 { return max(g.max/2, 1) }

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

// Stats are the served-run bound's counters, for /healthz.
type Stats struct {
	InFlightBytes int64  `json:"in_flight_bytes"`
	MaxBytes      int64  `json:"max_bytes"`
	Refused       uint64 `json:"refused"`
}

// Stats returns the gate's counters.
func (g *Gate) Stats() Stats {
	return Stats{InFlightBytes: g.inFlight.Load(), MaxBytes: g.max, Refused: g.refused.Load()}
}

// Hold takes size bytes of room (what serving a record or an answer
// costs) before it is built; release gives it back, or is a no-op when
// ctx defers it to ServingRuns' done. When no room comes within a short
// wait it returns refused, the number refused so far. One rule keeps the
// owner served: any one hold is charged at most half of the gate (a
// larger one is charged that half), and a guest's holds (guest: a
// principal who sees only its own runs) take at most half of the gate
// together, so the other half always has room for one administrator's
// read, however large. The memory this bounds is the gate plus, for each
// of the (at most two) holds charged the half, what it costs beyond it.
func (g *Gate) Hold(ctx context.Context, size int64, guest bool) (release func(), refused uint64) {
	nop := func() {}
	n := min(max(size, 1), g.half())
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if guest {
		if err := g.guests.Acquire(wctx, n); err != nil {
			return nil, g.refused.Add(1)
		}
	}
	if err := g.sem.Acquire(wctx, n); err != nil {
		if guest {
			g.guests.Release(n)
		}
		return nil, g.refused.Add(1)
	}
	g.inFlight.Add(n)
	var once sync.Once
	release = func() {
		once.Do(func() {
			g.inFlight.Add(-n)
			g.sem.Release(n)
			if guest {
				g.guests.Release(n)
			}
		})
	}
	if s, ok := ctx.Value(servingKey{}).(*serving); ok {
		s.mu.Lock()
		s.releases = append(s.releases, release)
		s.mu.Unlock()
		return nop, 0
	}
	return release, 0
}

// Max is the gate's bound in bytes.
func (g *Gate) Max() int64 { return g.max }
