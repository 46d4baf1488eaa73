package recorder

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func openStore(t *testing.T) *storage.Store {
	t.Helper()
	store, err := storage.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

func firingItem(rule, status string, started time.Time, final bool) *Item {
	id := storage.NewRunID()
	return &Item{Run: storage.Run{ID: id, Rule: rule, Kind: "firing", Status: status, OK: status == rules.StatusSuccess,
		Started: started, Ended: started, Level: pilotage.LevelFull, Expires: started.Add(time.Hour)},
		Env: &Envelope{RunID: id, Outcome: pilotage.Outcome{Status: status, OK: status == rules.StatusSuccess}}, Final: final, Announce: true}
}

func countRuns(t *testing.T, store *storage.Store, f storage.RunFilter) []storage.Run {
	t.Helper()
	f.Limit = 1000
	l, err := store.ListRuns(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestRecorderSupersedesPastTheRetention: a batch holding more than keep
// finished firings of a rule and status writes only the newest keep (the
// retention policy would trim the others at once), trims what the rule
// stored before, and writes every firing it may not supersede (recorded
// as running first) and every rule below keep.
func TestRecorderSupersedesPastTheRetention(t *testing.T) {
	store := openStore(t)
	const keep = 5
	rec := New(store, quiet(), keep)
	var announced []string
	rec.Announce = func(run *storage.Run) { announced = append(announced, run.ID) }
	rec.Start()
	defer rec.Close()
	t0 := time.Now()
	old := firingItem("hot", rules.StatusSuccess, t0.Add(-time.Minute), true)
	if err := store.InsertRuns(context.Background(), []storage.Run{old.Run}); err != nil {
		t.Fatal(err)
	}
	var newest []string
	for i := range 20 {
		it := firingItem("hot", rules.StatusSuccess, t0.Add(time.Duration(i)*time.Millisecond), true)
		if i >= 20-keep {
			newest = append(newest, it.Run.ID)
		}
		rec.AddItem(it)
		rec.AddItem(firingItem("hot", rules.StatusFailed, t0, true))
	}
	for range 8 {
		rec.AddItem(firingItem("waits", rules.StatusSuccess, t0, false))
	}
	for range 3 {
		rec.AddItem(firingItem("cool", rules.StatusSuccess, t0, true))
	}
	rec.Flush()
	hot := countRuns(t, store, storage.RunFilter{Rule: "hot", Status: rules.StatusSuccess})
	if len(hot) != keep {
		t.Fatalf("hot successes stored: %d, want the newest %d", len(hot), keep)
	}
	if n := len(countRuns(t, store, storage.RunFilter{Rule: "waits"})); n != 8 {
		t.Fatalf("firings recorded as running first stored: %d, want all 8", n)
	}
	for _, id := range newest {
		if _, err := store.GetRun(context.Background(), id); err != nil {
			t.Fatalf("one of the newest firings is not stored: %v", err)
		}
	}
	if n := len(countRuns(t, store, storage.RunFilter{Rule: "hot", Status: rules.StatusFailed})); n != keep {
		t.Fatalf("hot failures stored: %d, want %d", n, keep)
	}
	if n := len(countRuns(t, store, storage.RunFilter{Rule: "cool"})); n != 3 {
		t.Fatalf("cool firings stored: %d, want 3", n)
	}
	if _, err := store.GetRun(context.Background(), old.Run.ID); err == nil {
		t.Fatal("the rule's older stored firing was not trimmed")
	}
	st := rec.Stats()
	if st.Superseded != 30 || st.Written != 2*keep+8+3 || st.Queued != 0 || st.Summarized+st.Dropped+st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}
	if len(announced) != int(st.Written) {
		t.Fatalf("announced %d firings, want the %d written", len(announced), st.Written)
	}
}

// TestRecorderKeepsSummariesPastTheQueue: a firing that finds the queue
// full keeps a summary record (outcome and times, no trace), counted;
// past the summaries' bound too, records are dropped, counted.
func TestRecorderKeepsSummariesPastTheQueue(t *testing.T) {
	store := openStore(t)
	rec := NewSized(store, quiet(), 50, 4, 3)
	defer rec.Close()
	t0 := time.Now()
	var items []*Item
	for i := range 9 {
		it := firingItem("r", rules.StatusSuccess, t0.Add(time.Duration(i)*time.Millisecond), true)
		it.Env.Trace = &pilotage.Trace{Level: pilotage.LevelFull, Steps: []pilotage.TraceStep{{ID: "s"}}}
		items = append(items, it)
		rec.AddItem(it) // not started: the queue fills
	}
	if st := rec.Stats(); st.Summarized != 3 || st.Dropped != 2 || st.Queued != 7 {
		t.Fatalf("stats before the writer runs: %+v", st)
	}
	rec.Start()
	rec.Flush()
	for i, it := range items {
		run, err := store.GetRun(context.Background(), it.Run.ID)
		switch {
		case i < 4 && (err != nil || run.Level != pilotage.LevelFull):
			t.Fatalf("queued firing %d: %v %q", i, err, run.Level)
		case i >= 4 && i < 7 && (err != nil || run.Level != pilotage.LevelSummary || string(run.Envelope) != `{"run_id":"`+it.Run.ID+`","outcome":{"ok":true,"status":"success"}}`):
			t.Fatalf("summarized firing %d: %v %q %s", i, err, run.Level, run.Envelope)
		case i >= 7 && err == nil:
			t.Fatalf("firing %d past both bounds was stored", i)
		}
	}
	if st := rec.Stats(); st.Written != 7 || st.Queued != 0 {
		t.Fatalf("stats after: %+v", st)
	}
}

// TestBatchHoldsKeepPerRuleAsJSON: a busy batch holds at most keep final
// firings per rule and status, the newest, each as its encoded envelope
// (the firing's objects are released as it is pushed), whatever order
// they finish in; an arrival older than all held is superseded as it comes.
func TestBatchHoldsKeepPerRuleAsJSON(t *testing.T) {
	const keep, n = 4, 40
	w := newBatchWriter(&Recorder{keep: keep, log: quiet()})
	t0 := time.Now()
	var items []*Item
	for i := range n {
		// finish out of start order: pairs swapped
		at := t0.Add(time.Duration(i^1) * time.Millisecond)
		it := firingItem("hot", rules.StatusSuccess, at, true)
		items = append(items, it)
		w.push(it)
		if w.held > keep {
			t.Fatalf("after %d pushes the batch holds %d firings, want at most %d", i+1, w.held, keep)
		}
		if it.Env != nil {
			t.Fatalf("push %d kept the firing's envelope objects", i+1)
		}
	}
	late := firingItem("hot", rules.StatusSuccess, t0.Add(-time.Second), true)
	w.push(late)
	if w.held != keep || late.json != nil {
		t.Fatalf("an arrival older than all held: held %d, encoded %v; want superseded at once", w.held, late.json != nil)
	}
	w.gather()
	if len(w.rows) != keep {
		t.Fatalf("rows %d, want %d", len(w.rows), keep)
	}
	want := map[string]bool{}
	for _, it := range items {
		if !it.Run.Started.Before(t0.Add(time.Duration(n-keep) * time.Millisecond)) {
			want[it.Run.ID] = true
		}
	}
	for _, r := range w.rows {
		if !want[r.ID] {
			t.Fatalf("row %s started %v is not one of the newest %d", r.ID, r.Started.Sub(t0), keep)
		}
		if !strings.Contains(string(r.Envelope), r.ID) {
			t.Fatalf("row %s envelope %s", r.ID, r.Envelope)
		}
	}
}

// TestHeldFiringLetsItsTraceGo: once the batch holds a firing's record as
// JSON, the trace's steps, calls and variables are no longer reachable
// from the queued item (they share its allocation), yet the JSON has them.
func TestHeldFiringLetsItsTraceGo(t *testing.T) {
	w := newBatchWriter(&Recorder{keep: 4, log: quiet()})
	now := time.Now()
	id := storage.NewRunID()
	out := pilotage.Outcome{OK: true, Status: rules.StatusSuccess}
	steps := []pilotage.TraceStep{{ID: "turn_on_hall", Outcome: out}}
	res := &rules.RunResult{Calls: []rules.CallRecord{{Step: "turn_on_hall", ID: "light.hall.turn_on", At: now}},
		Vars: map[string]any{"level": 180.0}}
	fr := NewFiringRecord(storage.Run{ID: id, Rule: "hall", Kind: "firing", Status: out.Status, OK: true, Started: now,
		Ended: now, Level: pilotage.LevelFull}, out, res, steps, true)
	w.push(&fr.Item)
	if fr.trace.Steps != nil || fr.out.calls != nil || fr.out.vars != nil || fr.Env.Trace != nil || fr.Env.Output != nil {
		t.Fatalf("the held firing still reaches its trace: steps %v, calls %v, vars %v", fr.trace.Steps, fr.out.calls, fr.out.vars)
	}
	for _, want := range []string{id, "turn_on_hall", "light.hall.turn_on", `"level":180`} {
		if !strings.Contains(string(fr.Item.json), want) {
			t.Fatalf("held JSON %s lacks %s", fr.Item.json, want)
		}
	}
}

// TestBatchSupersedesPastTheRuleBytes: a batch of a rule's large firings
// wrote them all before its trim deleted most, so the database file grew
// by the whole batch (573 MB for 152 MB kept). The batch now writes only
// the newest that fit MaxRuleBytes, never fewer than one.
func TestBatchSupersedesPastTheRuleBytes(t *testing.T) {
	store := openStore(t)
	rec := New(store, quiet(), 50)
	pad := strings.Repeat("x", 10<<10)
	rec.MaxRuleBytes = 3*int64(len(pad)) + 3<<10 // three firings' envelopes
	rec.Start()
	defer rec.Close()
	t0 := time.Now()
	var newest []string
	for i := range 20 {
		it := firingItem("big", rules.StatusSuccess, t0.Add(time.Duration(i)*time.Millisecond), true)
		it.Env.Output = pad
		if i >= 17 {
			newest = append(newest, it.Run.ID)
		}
		rec.AddItem(it)
	}
	huge := firingItem("huge", rules.StatusSuccess, t0, true)
	huge.Env.Output = strings.Repeat(pad, 4) // alone past the bound: still written
	rec.AddItem(huge)
	rec.Flush()
	stored := countRuns(t, store, storage.RunFilter{Rule: "big"})
	if len(stored) != 3 {
		t.Fatalf("big firings stored: %d, want the newest 3", len(stored))
	}
	for i, r := range stored {
		if r.ID != newest[2-i] {
			t.Fatalf("stored %d is %s, want %s (newest first)", i, r.ID, newest[2-i])
		}
	}
	if n := len(countRuns(t, store, storage.RunFilter{Rule: "huge"})); n != 1 {
		t.Fatalf("a rule's only firing over the bound: %d stored, want 1", n)
	}
	if st := rec.Stats(); st.Superseded != 17 || st.Trimmed != 0 {
		t.Fatalf("stats %+v, want 17 superseded in the batch, none written to be trimmed", st)
	}
}

// TestRecordsOutliveAFailingTrim: a batch whose trims fail (here the
// database refuses every delete; in the attacker's flood a principal's
// trim ran past the write's deadline) is written again without them: its
// 2,988 records were lost whole, the owner's real firings among them.
func TestRecordsOutliveAFailingTrim(t *testing.T) {
	dir := t.TempDir()
	store, err := storage.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	db, err := sql.Open("sqlite", filepath.Join(dir, storage.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TRIGGER no_trims BEFORE DELETE ON runs BEGIN SELECT RAISE(ABORT, 'no deletes'); END`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	const keep = 5
	rec := New(store, quiet(), keep)
	rec.Start()
	defer rec.Close()
	t0 := time.Now()
	old := firingItem("hot", rules.StatusSuccess, t0.Add(-time.Minute), true) // what the trim would delete
	if err := store.InsertRuns(context.Background(), []storage.Run{old.Run}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 { // past keep: the rule is trimmed with the batch
		rec.AddItem(firingItem("hot", rules.StatusSuccess, t0.Add(time.Duration(i)*time.Millisecond), true))
	}
	rec.Flush()
	if n := len(countRuns(t, store, storage.RunFilter{Rule: "hot"})); n != keep+1 {
		t.Fatalf("hot firings stored: %d, want the newest %d and the old one, not trimmed", n, keep)
	}
	if st := rec.Stats(); st.Failed != 0 || st.Written != keep {
		t.Fatalf("stats %+v, want %d written and none failed", st, keep)
	}
}

// TestQueuedBytesBounded: firings waiting for the writer keep their
// traces up to maxQueuedBytes together; past it a firing keeps a summary
// (counted), as past the queue's length. A guest's firings recording
// megabytes each took the server past 500 MB while they waited.
func TestQueuedBytesBounded(t *testing.T) {
	store := openStore(t)
	rec := New(store, quiet(), 50)
	const each = 10 << 20
	t0 := time.Now()
	for i := range 10 { // the writer has not started: they all wait
		it := firingItem(fmt.Sprint("big", i), rules.StatusSuccess, t0, true)
		it.Bytes = each
		rec.AddItem(it)
	}
	if st := rec.Stats(); st.Summarized != 10-maxQueuedBytes/each {
		t.Fatalf("stats %+v, want %d summarized", st, 10-maxQueuedBytes/each)
	}
	rec.Start()
	defer rec.Close()
	rec.Flush()
	if n := rec.queuedBytes.Load(); n != 0 {
		t.Fatalf("%d bytes still counted once written", n)
	}
	full := 0
	for _, r := range countRuns(t, store, storage.RunFilter{Kind: "firing"}) {
		if r.Level == pilotage.LevelFull {
			full++
		}
	}
	if full != maxQueuedBytes/each {
		t.Fatalf("%d firings stored with their trace, want %d", full, maxQueuedBytes/each)
	}
}
