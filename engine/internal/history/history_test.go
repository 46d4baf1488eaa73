package history

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/storage"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestHistoryQueueBoundsAndCosts: the change feed's subscriber never
// allocates, and a full queue drops and counts instead of growing.
func TestHistoryQueueBoundsAndCosts(t *testing.T) {
	cfg := Config{Queue: 64}
	cfg.Defaults()
	h := New(nil, nil, quiet(), cfg, time.Now)
	ch := devices.Change{Kind: devices.ChangeState, ID: "hall_motion.occupancy", Value: true, Time: time.Now()}
	if a := testing.AllocsPerRun(50, func() { h.onChange(ch) }); a != 0 {
		t.Fatalf("onChange allocates %v per change", a)
	}
	for range 100 {
		h.onChange(ch)
	}
	h.onChange(devices.Change{Kind: devices.ChangeAvailability, ID: "hall_motion", Value: true})
	if len(h.buf) != 64 || h.dropped.Load() != 51+100-64 {
		t.Fatalf("queued %d, dropped %d", len(h.buf), h.dropped.Load())
	}
}

// TestHistoryRetention: a purge deletes the changes older than the
// retention.
func TestHistoryRetention(t *testing.T) {
	ctx := context.Background()
	store, err := storage.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	now := time.Now()
	var pts []storage.HistoryPoint
	for i := range 24 * 60 {
		pts = append(pts, storage.HistoryPoint{Entity: "x.temp", T: now.Add(-time.Duration(i) * time.Minute * 10), IsNum: true, Num: float64(i)})
	}
	if _, err := store.WriteHistory(ctx, pts, storage.HistoryWrite{}); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Retention: 3 * 24 * time.Hour}
	cfg.Defaults()
	h := New(store, nil, quiet(), cfg, time.Now)
	h.purge(ctx)
	if n, _ := store.HistoryCount(ctx, "x.temp", now.Add(-30*24*time.Hour), now.Add(time.Hour)); n != 3*24*6 {
		t.Fatalf("after purge: %d rows, want %d", n, 3*24*6)
	}
}

// TestHistoryBucketWidths: a chart's span is cut into buckets of a
// readable width, about points of them (720: the engine's default).
func TestHistoryBucketWidths(t *testing.T) {
	for _, c := range []struct {
		span time.Duration
		want time.Duration
	}{{time.Hour, 5 * time.Second}, {24 * time.Hour, 2 * time.Minute}, {7 * 24 * time.Hour, 15 * time.Minute}, {4 * time.Hour, 20 * time.Second}, {50 * time.Hour, 5 * time.Minute}} {
		if got := BucketWidth(c.span, 720); got != c.want {
			t.Errorf("BucketWidth(%v) = %v, want %v", c.span, got, c.want)
		}
	}
}
