package storage

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// TestHistoryCountsMatchAWalk: counts, bands and counts per value read by
// seeks equal what walking every row gives, over random ranges, for
// entities written in order, out of order within a batch, with the clock
// stepped back between batches, with many values, with numbers, with
// rows from before the counts, and under the rows' bound.
func TestHistoryCountsMatchAWalk(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	text := func(e string, ms int64, v string) HistoryPoint {
		return HistoryPoint{Entity: e, T: t0.Add(time.Duration(ms) * time.Millisecond), JSON: v}
	}
	values := func(n int) func(i int) string { return func(i int) string { return fmt.Sprintf(`"v%d"`, i%n) } }
	for _, tc := range []struct {
		name    string
		batches func(e string) [][]HistoryPoint
		legacy  int  // rows written before the counts (no seq)
		walked  bool // counts per value are walked for ranges from the start
		maxRows int
	}{
		{"in order", func(e string) [][]HistoryPoint { return seqBatches(e, 0, 3000, 700, values(3), text, false) }, 0, false, 0},
		{"reversed batches", func(e string) [][]HistoryPoint { return seqBatches(e, 0, 3000, 700, values(3), text, true) }, 0, false, 0},
		{"under the bound", func(e string) [][]HistoryPoint { return seqBatches(e, 0, 3000, 500, values(4), text, false) }, 0, false, 1000},
		{"clock stepped back", func(e string) [][]HistoryPoint {
			b := seqBatches(e, 100000, 1500, 500, values(3), text, false)
			return append(b, seqBatches(e, 50000, 1500, 500, values(3), text, false)...)
		}, 0, true, 0},
		{"many values", func(e string) [][]HistoryPoint { return seqBatches(e, 0, 3000, 700, values(100), text, false) }, 0, true, 0},
		{"numbers too", func(e string) [][]HistoryPoint {
			b := seqBatches(e, 0, 2000, 700, values(3), text, false)
			b[1][3] = HistoryPoint{Entity: e, T: b[1][3].T, IsNum: true, Num: 7}
			return b
		}, 0, true, 0},
		{"rows from before", func(e string) [][]HistoryPoint { return seqBatches(e, 20000, 2000, 700, values(3), text, false) }, 1500, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openTest(t)
			const e = "x.mode"
			for i := range tc.legacy {
				if _, err := s.w.ExecContext(ctx, `INSERT INTO history_entities (id, entity) VALUES (1, ?) ON CONFLICT DO NOTHING;
					INSERT INTO history (entity, t, val) VALUES (1, ?, ?)`, e, t0.UnixMilli()+int64(i)*13, fmt.Sprintf(`"v%d"`, i%5)); err != nil {
					t.Fatal(err)
				}
			}
			for _, b := range tc.batches(e) {
				if _, err := s.WriteHistory(ctx, b, HistoryWrite{MaxRows: tc.maxRows}); err != nil {
					t.Fatal(err)
				}
			}
			checkAgainstWalk(t, s, e, t0, tc.walked)
		})
	}
}

// seqBatches is n changes of e from ms on, 10 ms apart, in batches of
// size (each reversed when asked).
func seqBatches(e string, ms int64, n, size int, val func(int) string, text func(string, int64, string) HistoryPoint, reverse bool) [][]HistoryPoint {
	var out [][]HistoryPoint
	for i := 0; i < n; i += size {
		var b []HistoryPoint
		for j := i; j < min(i+size, n); j++ {
			b = append(b, text(e, ms+int64(j)*10, val(j)))
		}
		if reverse {
			for l, r := 0, len(b)-1; l < r; l, r = l+1, r-1 {
				b[l], b[r] = b[r], b[l]
			}
		}
		out = append(out, b)
	}
	return out
}

func checkAgainstWalk(t *testing.T, s *Store, e string, t0 time.Time, walked bool) {
	t.Helper()
	ctx := context.Background()
	id, _, _ := s.histID(ctx, e)
	rng := rand.New(rand.NewPCG(1, 2))
	if _, vfrom, _ := s.histFrom(ctx, id); walked == counted(vfrom, t0) {
		t.Errorf("counts per value from the start: walked %v, want %v", !walked, walked)
	}
	for range 150 {
		a, b := rng.Int64N(140000), rng.Int64N(140000)
		from, to := t0.Add(time.Duration(min(a, b))*time.Millisecond), t0.Add(time.Duration(max(a, b)+1)*time.Millisecond)
		n, err := s.HistoryCount(ctx, e, from, to)
		want, _ := s.historyCountWalk(ctx, id, from, to)
		if err != nil || n != want {
			t.Fatalf("count [%v, %v): %d, %v; walk %d", from, to, n, err, want)
		}
		w := []time.Duration{time.Second, 7 * time.Second, time.Minute}[rng.IntN(3)]
		bs, err := s.HistoryLastBuckets(ctx, e, from, to, w)
		wantBs, _ := s.historyLastBucketsWalk(ctx, id, from.UnixMilli(), to.UnixMilli(), w.Milliseconds())
		if err != nil || !reflect.DeepEqual(bs, wantBs) {
			t.Fatalf("bands [%v, %v) by %v: %v\n%+v\nwalk\n%+v", from, to, w, err, bs, wantBs)
		}
		counts, partial, err := s.HistoryValueCounts(ctx, e, from, to, 32)
		wantCounts := walkCounts(t, s, id, from, to)
		if err != nil || (partial == 0 && !reflect.DeepEqual(counts, wantCounts)) {
			t.Fatalf("counts [%v, %v): %v (walked %d), %v; walk %v", from, to, counts, partial, err, wantCounts)
		}
	}
}

// TestHistoryValueCountsWalkIsBounded: counts per value of a state with
// more values than are tracked cover the range's latest maxCountWalk
// changes, and say so.
func TestHistoryValueCountsWalkIsBounded(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	text := func(e string, ms int64, v string) HistoryPoint {
		return HistoryPoint{Entity: e, T: t0.Add(time.Duration(ms) * time.Millisecond), JSON: v}
	}
	for _, b := range seqBatches("x.text", 0, maxCountWalk+2000, 4000, func(i int) string { return fmt.Sprintf(`"%d"`, i%(2*maxTrackedValues)) }, text, false) {
		if _, err := s.WriteHistory(ctx, b, HistoryWrite{}); err != nil {
			t.Fatal(err)
		}
	}
	counts, walked, err := s.HistoryValueCounts(ctx, "x.text", t0, t0.Add(time.Hour), 1000)
	total := 0
	for _, n := range counts {
		total += n
	}
	if err != nil || walked != maxCountWalk || total != maxCountWalk {
		t.Errorf("walked %d, counted %d, %v; want %d", walked, total, err, maxCountWalk)
	}
}

// walkCounts counts per value every change in [from, to), the 32 most
// frequent.
func walkCounts(t *testing.T, s *Store, id int64, from, to time.Time) map[string]int {
	t.Helper()
	out := map[string]int{}
	rows, err := s.r.Query(`SELECT coalesce(val, CAST(num AS TEXT), 'null') AS v, count(*) AS n FROM history
		WHERE entity = ? AND t >= ? AND t < ? GROUP BY v ORDER BY n DESC, v LIMIT 32`, id, from.UnixMilli(), to.UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		var n int
		if err := rows.Scan(&v, &n); err != nil {
			t.Fatal(err)
		}
		out[v] = n
	}
	return out
}
