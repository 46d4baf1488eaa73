package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestRestartRecordsNoSameValue: a restart whose first value of a state
// is the one recorded before it adds no point to that state's history
// (the chart) and leaves lookup get's last_changed at the real change,
// whichever of the catalog and the engine starts first; a different
// value after the restart is recorded.
func TestRestartRecordsNoSameValue(t *testing.T) {
	const id = "hall_motion.occupancy"
	for i, catalogFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("catalog first %v", catalogFirst), func(t *testing.T) {
			ctx := context.Background()
			h := newHouse(t, Config{})
			t0 := time.Now().Add(-time.Minute)
			h.set("hall_motion", "occupancy", true)
			h.set("hall_motion", "occupancy", false)
			h.eng.FlushHistory()
			_, changed, ok, err := h.store.HistorySince(ctx, id)
			if err != nil || !ok {
				t.Fatalf("no recorded change before the restart: %v", err)
			}
			points := func() int {
				t.Helper()
				pts, err := h.store.HistoryChanges(ctx, id, t0, time.Now().Add(time.Minute), 100)
				if err != nil {
					t.Fatal(err)
				}
				return len(pts)
			}
			before := points()

			h.restartProcess(60+i, nil, catalogFirst)
			testutil.Eventually(t, 10*time.Second, "the retained occupancy", func() bool {
				l, _ := h.devs.Live(id)
				return l.Value == false
			})
			h.eng.FlushHistory()
			if got := points(); got != before {
				t.Errorf("the same value after the restart: %d points, want %d", got, before)
			}
			res, err := h.eng.Lookup(ctx, LookupRequest{Verb: "get", ID: id})
			if err != nil {
				t.Fatal(err)
			}
			if l := res.(*GetResponse).Live; l == nil || !l.LastChanged.Equal(changed) {
				t.Errorf("lookup get's live after the restart: %+v, want last_changed %v", l, changed)
			}

			h.set("hall_motion", "occupancy", true)
			h.eng.FlushHistory()
			if got := points(); got != before+1 {
				t.Errorf("a different value after the restart: %d points, want %d", got, before+1)
			}
		})
	}
}
