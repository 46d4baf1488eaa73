package engine

import (
	"context"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/storage"
)

// TestHistoryReadCostFlat: reading a day of a chatty text state costs
// about the same at 200,000 changes as at 20,000 (indexed seeks per
// bucket and per value, not a walk of every row), so a chatty entity's
// chart cannot slow every other call down.
func TestHistoryReadCostFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 220,000 history rows")
	}
	// The recorder's own rows (the demo's values now) would land after
	// the day written below: not flushed during the test.
	h := newHouse(t, Config{History: HistoryConfig{FlushEvery: time.Hour}})
	ctx := context.Background()
	now := time.Now()
	fill := func(entity string, n int) {
		step := 22 * time.Hour / time.Duration(n)
		var pts []storage.HistoryPoint
		for i := range n {
			pts = append(pts, storage.HistoryPoint{Entity: entity, T: now.Add(-22*time.Hour + time.Duration(i)*step),
				JSON: []string{"true", "false"}[i%2]})
			if len(pts) == 10000 || i == n-1 {
				if _, err := h.store.WriteHistory(ctx, pts, storage.HistoryWrite{}); err != nil {
					t.Fatal(err)
				}
				pts = pts[:0]
			}
		}
	}
	fill("hall_motion.occupancy", 20000)
	fill("front_door.contact", 200000)
	read := func(id string) time.Duration {
		best := time.Hour
		for range 3 {
			t0 := time.Now()
			hist, err := h.eng.History(ctx, HistoryRequest{ID: id, From: now.Add(-24 * time.Hour), To: now})
			d := time.Since(t0)
			if err != nil || len(hist.Bands) == 0 || hist.Counts["true"] == 0 {
				t.Fatalf("%s: %v %+v", id, err, hist)
			}
			best = min(best, d)
		}
		return best
	}
	small, big := read("hall_motion.occupancy"), read("front_door.contact")
	t.Logf("a day of a text state: %v at 20,000 changes, %v at 200,000", small, big)
	if big > 3*small+20*time.Millisecond {
		t.Errorf("reading 200,000 changes took %v, 20,000 %v: the read walks the rows", big, small)
	}
}
