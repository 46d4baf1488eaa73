package storage

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// sensor writes a numeric entity reporting every step from start, n times,
// value i%10, in batches of 1,000.
func sensor(t testing.TB, s *Store, entity string, start time.Time, step time.Duration, n int, o HistoryWrite) {
	t.Helper()
	var batch []HistoryPoint
	for i := range n {
		batch = append(batch, HistoryPoint{Entity: entity, T: start.Add(time.Duration(i) * step), IsNum: true, Num: float64(i % 10)})
		if len(batch) == 1000 || i == n-1 {
			if _, err := s.WriteHistory(context.Background(), batch, o); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

func TestHistoryChangesBeforeAndCount(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	pts := []HistoryPoint{
		{Entity: "hall_motion.occupancy", T: t0, JSON: "false"},
		{Entity: "hall_motion.occupancy", T: t0.Add(time.Minute), JSON: "true"},
		{Entity: "hall_light.brightness", T: t0.Add(time.Minute), IsNum: true, Num: 180},
		{Entity: "hall_motion.occupancy", T: t0.Add(2 * time.Minute), JSON: "false"},
		{Entity: "hall_motion.occupancy", T: t0.Add(3 * time.Minute)}, // no JSON: stored as SQL NULL, read as null
	}
	if _, err := s.WriteHistory(ctx, pts, HistoryWrite{}); err != nil {
		t.Fatal(err)
	}
	got, err := s.HistoryChanges(ctx, "hall_motion.occupancy", t0.Add(30*time.Second), t0.Add(time.Hour), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].JSON != "true" || got[1].JSON != "false" || !got[0].T.Equal(t0.Add(time.Minute)) || got[2].JSON != "" {
		t.Fatalf("changes: %+v", got)
	}
	if got, _ := s.HistoryChanges(ctx, "hall_motion.occupancy", t0, t0.Add(time.Hour), 2); len(got) != 2 {
		t.Fatalf("limit: %d", len(got))
	}
	v, ok, err := s.HistoryBefore(ctx, "hall_motion.occupancy", t0.Add(90*time.Second))
	if err != nil || !ok || v.JSON != "true" {
		t.Fatalf("before: %+v %v %v", v, ok, err)
	}
	if _, ok, _ := s.HistoryBefore(ctx, "hall_motion.occupancy", t0); ok {
		t.Fatal("a value before the first change")
	}
	if _, ok, _ := s.HistoryBefore(ctx, "nobody.knows", t0.Add(time.Hour)); ok {
		t.Fatal("a value of an unknown entity")
	}
	n, err := s.HistoryCount(ctx, "hall_motion.occupancy", t0, t0.Add(time.Hour))
	if err != nil || n != 4 {
		t.Fatalf("count: %d %v", n, err)
	}
	num, _ := s.HistoryChanges(ctx, "hall_light.brightness", t0, t0.Add(time.Hour), 10)
	if len(num) != 1 || !num[0].IsNum || num[0].Num != 180 {
		t.Fatalf("numeric: %+v", num)
	}
}

func TestHistoryBucketsRawAndSummaries(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	sensor(t, s, "weather.temp", t0, 10*time.Second, 6*60*24, HistoryWrite{}) // one day every 10 s
	// 2-minute buckets from the raw rows: 12 values each, 0..9 cycling.
	raw, err := s.HistoryNumBuckets(ctx, "weather.temp", t0, t0.Add(time.Hour), 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != 30 || raw[0].N != 12 || raw[0].Lo != 0 || raw[0].Hi != 9 || !raw[1].T.Equal(t0.Add(2*time.Minute)) {
		t.Fatalf("raw buckets: %d %+v", len(raw), raw[:2])
	}
	// 15-minute buckets from the 5-minute summaries: 90 values each.
	sum, err := s.HistoryNumBuckets(ctx, "weather.temp", t0, t0.Add(24*time.Hour), 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum) != 96 || sum[0].N != 90 || sum[0].Lo != 0 || sum[0].Hi != 9 || sum[0].Mean != 4.5 {
		t.Fatalf("summary buckets: %d %+v", len(sum), sum[0])
	}
	last, err := s.HistoryLastBuckets(ctx, "weather.temp", t0, t0.Add(time.Hour), 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// 60 values per bucket; the last of each is value 59%10 = 9.
	if len(last) != 6 || last[0].N != 60 || !last[0].Last.IsNum || last[0].Last.Num != 9 ||
		!last[0].Last.T.Equal(t0.Add(590*time.Second)) {
		t.Fatalf("last buckets: %+v", last[0])
	}
	if _, err := s.HistoryNumBuckets(ctx, "weather.temp", t0, t0, 0); err == nil {
		t.Fatal("zero width accepted")
	}
}

// TestHistorySumsWaitForAFlush: a writer that keeps the summaries writes
// them when it asks, all at once.
func TestHistorySumsWaitForAFlush(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	sums := &HistorySums{}
	for i := range 3 {
		pt := []HistoryPoint{{Entity: "a.num", T: t0.Add(time.Duration(i) * time.Minute), IsNum: true, Num: float64(i)}}
		if _, err := s.WriteHistory(ctx, pt, HistoryWrite{Sums: sums}); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := s.HistoryNumBuckets(ctx, "a.num", t0, t0.Add(time.Hour), 5*time.Minute); len(b) != 0 || sums.Len() != 1 {
		t.Fatalf("summaries written before a flush: %+v, %d pending", b, sums.Len())
	}
	if _, err := s.WriteHistory(ctx, nil, HistoryWrite{Sums: sums, FlushSums: true}); err != nil {
		t.Fatal(err)
	}
	b, _ := s.HistoryNumBuckets(ctx, "a.num", t0, t0.Add(time.Hour), 5*time.Minute)
	if len(b) != 1 || b[0].N != 3 || b[0].Lo != 0 || b[0].Hi != 2 || sums.Len() != 0 {
		t.Fatalf("after the flush: %+v, %d pending", b, sums.Len())
	}
}

func TestHistoryBoundAndPurge(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	sensor(t, s, "a.num", t0, time.Second, 3000, HistoryWrite{MaxRows: 1000})
	n, err := s.HistoryRows(ctx)
	if err != nil || n != 1000 {
		t.Fatalf("rows after the bound: %d %v", n, err)
	}
	// The oldest went first; the summaries keep counting them.
	if _, ok, _ := s.HistoryBefore(ctx, "a.num", t0.Add(2500*time.Second)); !ok {
		t.Fatal("newest rows gone")
	}
	if c, _ := s.HistoryCount(ctx, "a.num", t0, t0.Add(2000*time.Second)); c != 0 {
		t.Fatalf("rows older than the bound kept: %d", c)
	}
	b, _ := s.HistoryNumBuckets(ctx, "a.num", t0, t0.Add(time.Hour), 5*time.Minute)
	total := 0
	for _, x := range b {
		total += x.N
	}
	if total != 3000 {
		t.Fatalf("summaries count %d changes, want 3000", total)
	}
	gone, err := s.PurgeHistory(ctx, t0.Add(2500*time.Second))
	if err != nil || gone < 500 {
		t.Fatalf("purge: %d %v", gone, err)
	}
	if c, _ := s.HistoryCount(ctx, "a.num", t0, t0.Add(time.Hour)); c != 500 {
		t.Fatalf("after purge: %d rows", c)
	}
	b, _ = s.HistoryNumBuckets(ctx, "a.num", t0, t0.Add(time.Hour), 5*time.Minute)
	if len(b) == 0 || b[0].T.Before(t0.Add(2400*time.Second)) {
		t.Fatalf("summaries before the purge time kept: %+v", b[0])
	}
}

// BenchmarkWriteHistory writes 1,000-row batches as the engine's recorder
// does (ids kept between batches, summaries written every 15th batch),
// over 20 entities and over 1,000; text states alternate two values, so
// every row is a change.
func BenchmarkWriteHistory(b *testing.B) {
	for _, entities := range []int{20, 1000} {
		b.Run(fmt.Sprintf("entities=%d", entities), func(b *testing.B) {
			s, _ := openTest(b)
			t0 := time.Now()
			batch := make([]HistoryPoint, 1000)
			names := make([]string, entities)
			for i := range names {
				names[i] = fmt.Sprintf("e%d.v", i)
			}
			ids, sums := &HistoryIDs{}, &HistorySums{}
			b.ResetTimer()
			for n := 0; b.Loop(); n++ {
				for i := range batch {
					batch[i] = HistoryPoint{Entity: names[i%entities], T: t0.Add(time.Duration(n*1000+i) * time.Millisecond),
						IsNum: i%2 == 0, Num: float64(i), JSON: [...]string{"true", "false"}[(n*1000+i)/entities%2]}
				}
				if _, err := s.WriteHistory(context.Background(), batch, HistoryWrite{MaxRows: 100000, IDs: ids, Sums: sums, FlushSums: n%15 == 14}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/row")
		})
	}
}
