package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/storage"
)

// TestDowntimesAcrossRestarts: the time between a stop and the next start
// on the same store is a downtime, and so is the time after a run that
// ended without its stop note (a crash) from its last note on; the list is
// bounded and cut to the asked range.
func TestDowntimesAcrossRestarts(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var now atomic.Int64
	now.Store(t0.UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	run := func(crash bool) {
		store, err := storage.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		e := New(Config{Now: clock}, nil, store, quiet())
		if err := e.Start(ctx); err != nil {
			t.Fatal(err)
		}
		now.Add(int64(10 * time.Minute)) // runs for 10 minutes
		if crash {
			// A crash: the stop note cannot be written, the store keeps
			// the start's note.
			store.Close()
			e.Close()
		} else {
			e.Close()
			store.Close()
		}
		now.Add(int64(time.Hour)) // down for an hour
	}
	run(false) // 12:00–12:10, down until 13:10
	run(true)  // 13:10–13:20, crashed: known alive at 13:10, down until 14:20
	store, err := storage.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := New(Config{Now: clock}, nil, store, quiet())
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	at := func(h, m int) time.Time { return time.Date(2026, 3, 1, h, m, 0, 0, time.UTC) }
	for _, c := range []struct {
		name     string
		from, to time.Time
		want     []Downtime
	}{
		{"all", at(11, 0), at(15, 0), []Downtime{{From: at(12, 10), To: at(13, 10)}, {From: at(13, 10), To: at(14, 20)}}},
		{"cut", at(12, 40), at(14, 0), []Downtime{{From: at(12, 40), To: at(13, 10)}, {From: at(13, 10), To: at(14, 0)}}},
		{"none", at(11, 0), at(12, 5), nil},
	} {
		got := e.Downtimes(c.from, c.to)
		if len(got) != len(c.want) {
			t.Fatalf("%s: %v, want %v", c.name, got, c.want)
		}
		for i := range got {
			if !got[i].From.Equal(c.want[i].From) || !got[i].To.Equal(c.want[i].To) {
				t.Errorf("%s: downtime %d = %v–%v, want %v–%v", c.name, i, got[i].From, got[i].To, c.want[i].From, c.want[i].To)
			}
		}
	}
}
