// Package uptime keeps the server's own up time in the store's meta table:
// charts draw the time the server was not running as a gap instead of
// holding the last value across it (nothing was recorded then, not
// "nothing changed").
package uptime

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/storage"
)

const (
	uptimeKey = "uptime"
	// uptimeBeat is how often the engine notes that it still runs: a
	// crash shows as down from at most this long after it happened.
	uptimeBeat = 30 * time.Second
	// maxDowntimes bounds the past downtimes kept (the oldest go first).
	maxDowntimes = 100
)

// uptimeRecord is the stored record; times are Unix milliseconds.
type uptimeRecord struct {
	Start int64      `json:"start"`          // this run's start
	Alive int64      `json:"alive"`          // when it was last known to run
	Down  [][2]int64 `json:"down,omitempty"` // past downtimes, oldest first
}

// Downtime is a span of time the server was not running.
type Downtime struct{ From, To time.Time }

// Tracker keeps the record: its copy in memory, and the store's.
type Tracker struct {
	store *storage.Store
	log   *slog.Logger
	now   func() time.Time

	mu  sync.Mutex
	rec uptimeRecord
}

// New makes a tracker of the up time kept in store.
func New(store *storage.Store, log *slog.Logger, now func() time.Time) *Tracker {
	return &Tracker{store: store, log: log, now: now}
}

// Start records that the server was down from the last time the
// previous run was known alive until now, and keeps noting that this run
// is alive until ctx ends (the last note then is the stop), on a
// goroutine wg counts.
func (e *Tracker) Start(ctx context.Context, wg *sync.WaitGroup) {
	now := e.now().UnixMilli()
	var rec uptimeRecord
	v, err := e.store.GetMeta(ctx, uptimeKey)
	switch {
	case err == nil:
		if err := json.Unmarshal([]byte(v), &rec); err != nil {
			e.log.Warn("the stored up time is unreadable; past downtimes are forgotten", "err", err)
			rec = uptimeRecord{}
		}
	case !errors.Is(err, storage.ErrNotFound):
		e.log.Warn("reading the stored up time failed; past downtimes are not shown", "err", err)
	}
	if rec.Alive > 0 && rec.Alive < now {
		rec.Down = append(rec.Down, [2]int64{rec.Alive, now})
	}
	if n := len(rec.Down); n > maxDowntimes {
		rec.Down = append([][2]int64(nil), rec.Down[n-maxDowntimes:]...)
	}
	rec.Start, rec.Alive = now, now
	e.mu.Lock()
	e.rec = rec
	e.mu.Unlock()
	e.noteAlive(ctx)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(uptimeBeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				e.noteAlive(stop)
				cancel()
				return
			case <-t.C:
				e.noteAlive(ctx)
			}
		}
	}()
}

// noteAlive stores that the server runs now.
func (e *Tracker) noteAlive(ctx context.Context) {
	e.mu.Lock()
	e.rec.Alive = max(e.rec.Alive, e.now().UnixMilli())
	b, err := json.Marshal(e.rec)
	e.mu.Unlock()
	if err == nil {
		err = e.store.SetMeta(ctx, uptimeKey, string(b))
	}
	if err != nil && ctx.Err() == nil {
		e.log.Warn("recording the up time failed: a stop now would not show as a gap in the charts", "err", err)
	}
}

// Downtimes lists the recorded spans in [from, to) during which the server
// was not running, oldest first, cut to the range.
func (e *Tracker) Downtimes(from, to time.Time) []Downtime {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Downtime
	for _, d := range e.rec.Down {
		a, b := time.UnixMilli(d[0]), time.UnixMilli(d[1])
		if b.After(from) && a.Before(to) {
			out = append(out, Downtime{From: maxTime(a, from), To: minTime(b, to)})
		}
	}
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
