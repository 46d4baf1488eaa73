package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuMeter reports process CPU time per op alongside wall time: this
// machine is shared, and CPU time is far less disturbed by other load.
type cpuMeter struct {
	start time.Duration
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() *cpuMeter { return &cpuMeter{start: cpuNow()} }

func (m *cpuMeter) report(b *testing.B, ops int) {
	b.ReportMetric(float64(cpuNow()-m.start)/float64(ops), "cpu-ns/op")
}

// benchEnvelope is a realistic ~2 KiB envelope: outcome plus a trace of
// a dozen steps.
func benchEnvelope(id string) json.RawMessage {
	var b strings.Builder
	fmt.Fprintf(&b, `{"run_id":%q,"outcome":{"ok":true,"status":"success"},"trace":{"level":"full","steps":[`, id)
	for i := 0; b.Len() < 2000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":"s%d","path":"/do/%d","kind":"call","outcome":{"ok":true,"status":"success"},"t_ms":%d.5,"changed":{"light.kitchen":{"state":"ON"}}}`, i, i, i)
	}
	b.WriteString(`]}}`)
	return json.RawMessage(b.String())
}

func benchRuns(n int, start time.Time) []Run {
	runs := make([]Run, n)
	for i := range runs {
		t := start.Add(time.Duration(i) * time.Millisecond)
		id := newRunID(t)
		runs[i] = Run{ID: id, Principal: "alice", Rule: fmt.Sprintf("rule%d", i%20), Ref: "ref1", Kind: KindFiring,
			Status: "success", OK: true, Started: t, Ended: t.Add(time.Millisecond), Level: "full",
			Envelope: benchEnvelope(id), Expires: t.Add(7 * 24 * time.Hour)}
	}
	return runs
}

func openBench(b *testing.B, readers int) *Store {
	b.Helper()
	s, err := open(context.Background(), b.TempDir(), readers, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	s.now = func() time.Time { return t0 }
	return s
}

func fill(b *testing.B, s *Store, n int) []Run {
	b.Helper()
	all := benchRuns(n, t0.Add(-time.Hour))
	for i := 0; i < n; i += 500 {
		if err := s.InsertRuns(context.Background(), all[i:min(i+500, n)]); err != nil {
			b.Fatal(err)
		}
	}
	return all
}

func BenchmarkInsertRuns100(b *testing.B) {
	s := openBench(b, readConns)
	ctx := context.Background()
	batches := make([][]Run, 0, 64)
	start := t0
	var cpu time.Duration
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		if i%64 == 0 {
			batches = batches[:0]
			for range 64 {
				batches = append(batches, benchRuns(100, start))
				start = start.Add(time.Second)
			}
		}
		batch := batches[i%64]
		b.StartTimer()
		c := cpuNow()
		if err := s.InsertRuns(ctx, batch); err != nil {
			b.Fatal(err)
		}
		cpu += cpuNow() - c
	}
	b.ReportMetric(float64(b.N*100)/b.Elapsed().Seconds(), "runs/s")
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

func BenchmarkGetRun(b *testing.B) {
	s := openBench(b, readConns)
	all := fill(b, s, 10000)
	ctx := context.Background()
	b.ResetTimer()
	m := startCPU()
	for b.Loop() {
		if _, err := s.GetRun(ctx, all[rand.IntN(len(all))].ID); err != nil {
			b.Fatal(err)
		}
	}
	m.report(b, b.N)
}

func BenchmarkListRuns(b *testing.B) {
	s := openBench(b, readConns)
	all := fill(b, s, 10000)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		f    RunFilter
	}{
		{"newest50", RunFilter{Limit: 50}},
		{"cursor50", RunFilter{Limit: 50, Before: all[5000].ID}},
		{"newest50-skipenvelope", RunFilter{Limit: 50, SkipEnvelope: true}},
		{"rule50", RunFilter{Limit: 50, Rule: "rule7"}},
		{"rule+failed(none)", RunFilter{Limit: 50, Rule: "rule7", Status: "failed"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			m := startCPU()
			for b.Loop() {
				if _, err := s.ListRuns(ctx, c.f); err != nil {
					b.Fatal(err)
				}
			}
			m.report(b, b.N)
		})
	}
}

// BenchmarkReadsDuringWrites measures GetRun from parallel readers while
// a writer inserts batches, with split pools and with one shared connection.
func BenchmarkReadsDuringWrites(b *testing.B) {
	for _, readers := range []int{readConns, 0} {
		b.Run(fmt.Sprintf("readers=%d", readers), func(b *testing.B) {
			s := openBench(b, readers)
			all := fill(b, s, 10000)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan int)
			go func() {
				n := 0
				start := t0
				for ctx.Err() == nil {
					if err := s.InsertRuns(ctx, benchRuns(100, start)); err == nil {
						n++
					}
					start = start.Add(time.Second)
				}
				done <- n
			}()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.GetRun(ctx, all[rand.IntN(len(all))].ID); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			cancel()
			batches := <-done
			b.ReportMetric(float64(batches*100)/b.Elapsed().Seconds(), "written-runs/s")
		})
	}
}

// BenchmarkTrimRule: the trim statement as the firing recorder runs it
// (prepared once, executed per rule) on a rule already within its 50.
// With kind and status bound as parameters it took 139–168 µs, about 55
// of them preparing the statement again at every execution (see
// trimRuleSQL); with them as literals 84–104 µs.
func BenchmarkTrimRule(b *testing.B) {
	ctx := context.Background()
	s, err := Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	t0 := time.Now()
	rows := make([]Run, 50)
	for j := range rows {
		at := t0.Add(time.Duration(j) * time.Millisecond)
		rows[j] = Run{ID: newRunID(at), Principal: "owner", Rule: "r", Ref: "automation.r@1", Kind: KindFiring,
			Status: "success", OK: true, Started: at, Ended: at, Level: "full", Expires: at.Add(time.Hour), Envelope: []byte(`{}`)}
	}
	if err := s.InsertRuns(ctx, rows); err != nil {
		b.Fatal(err)
	}
	st, err := s.stmt(ctx, s.w, trimRuleSQL)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := st.ExecContext(ctx, "r", 50); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteHistory20000: one history writer batch at 10,000 changes
// a second (FlushEvery 2 s) from 100 numeric entities, into a table
// already holding earlier batches: each chunk's rows land in index leaves
// of every entity.
func BenchmarkWriteHistory20000(b *testing.B) {
	benchWriteHistory(b, func(i int) HistoryPoint { return HistoryPoint{IsNum: true, Num: float64(i)} })
}

// BenchmarkWriteHistoryText20000 is BenchmarkWriteHistory20000 with text
// states of three values (each row numbered, per entity and per value).
func BenchmarkWriteHistoryText20000(b *testing.B) {
	benchWriteHistory(b, func(i int) HistoryPoint { return HistoryPoint{JSON: [...]string{`"on"`, `"off"`, `"idle"`}[i%3]} })
}

func benchWriteHistory(b *testing.B, value func(i int) HistoryPoint) {
	s := openBench(b, readConns)
	ctx := context.Background()
	o := HistoryWrite{IDs: &HistoryIDs{}, Sums: &HistorySums{}}
	const n, entities = 20000, 100
	pts := make([]HistoryPoint, n)
	start := t0
	fill := func() {
		for i := range pts {
			pts[i] = value(i / entities)
			pts[i].Entity, pts[i].T = fmt.Sprintf("sensor.bs%d_seq", i%entities), start.Add(time.Duration(i)*100*time.Microsecond)
		}
		start = start.Add(2 * time.Second)
	}
	for range 3 {
		fill()
		if _, err := s.WriteHistory(ctx, pts, o); err != nil {
			b.Fatal(err)
		}
	}
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		fill()
		b.StartTimer()
		c := cpuNow()
		if _, err := s.WriteHistory(ctx, pts, o); err != nil {
			b.Fatal(err)
		}
		cpu += cpuNow() - c
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}
