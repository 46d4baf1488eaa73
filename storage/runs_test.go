package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func mkRun(rule, status string, ok bool, started time.Time) Run {
	id := newRunID(started)
	return Run{
		ID: id, Principal: "alice", Rule: rule, Ref: "ref1", Kind: KindFiring,
		Status: status, OK: ok, Started: started, Ended: started.Add(time.Millisecond), Level: "full",
		Envelope: json.RawMessage(fmt.Sprintf(`{"run_id":%q,"outcome":{"ok":%t,"status":%q},"trace":{"level":"full","steps":[]}}`, id, ok, status)),
	}
}

func TestRunRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	r := mkRun("porch", "success", true, t0.Add(123456789*time.Nanosecond))
	r.Expires = t0.Add(24 * time.Hour)
	s.now = func() time.Time { return t0 }
	if err := s.InsertRuns(ctx, []Run{r}); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != r.ID || !got.Started.Equal(r.Started) || !got.Ended.Equal(r.Ended) || !got.Expires.Equal(r.Expires) ||
		string(got.Envelope) != string(r.Envelope) || !got.OK || got.Kind != KindFiring || got.Level != "full" {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
	}
	if _, err := s.GetRun(ctx, "run_nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetRun unknown = %v", err)
	}
	// Expired but not yet purged: indistinguishable from unknown.
	s.now = func() time.Time { return r.Expires }
	if _, err := s.GetRun(ctx, r.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetRun expired = %v", err)
	}
	if l, _ := s.ListRuns(ctx, RunFilter{}); len(l) != 0 {
		t.Fatalf("ListRuns shows expired runs: %d", len(l))
	}
	bad := mkRun("porch", "success", true, t0)
	bad.Envelope = json.RawMessage(`{"run_id":`)
	if err := s.InsertRuns(ctx, []Run{mkRun("x", "success", true, t0), bad}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad envelope: %v", err)
	}
	if err := s.UpsertRun(ctx, Run{ID: "r"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("zero start: %v", err)
	}
}

func TestUpsertRunFinishesRunning(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	r := mkRun("porch", StatusRunning, false, t0)
	r.Ended = time.Time{}
	if err := s.UpsertRun(ctx, r); err != nil {
		t.Fatal(err)
	}
	r.Status, r.OK, r.Ended = "success", true, t0.Add(time.Second)
	if err := s.InsertRuns(ctx, []Run{r}); err != nil {
		t.Fatalf("finishing through the batch path: %v", err)
	}
	got, err := s.GetRun(ctx, r.ID)
	if err != nil || got.Status != "success" || !got.OK || !got.Ended.Equal(r.Ended) {
		t.Fatalf("finished run = %+v, %v", got, err)
	}
}

func TestTrimRuleKeepsLastFailure(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	var runs []Run
	fail := mkRun("porch", "failed", false, t0)
	runs = append(runs, fail, mkRun("porch", "failed", false, t0.Add(-time.Hour)))
	for i := range 100 {
		runs = append(runs, mkRun("porch", "success", true, t0.Add(time.Duration(i+1)*time.Second)))
	}
	deploy := mkRun("porch", "success", true, t0.Add(-2*time.Hour))
	deploy.Kind = KindDeploy
	running := mkRun("porch", StatusRunning, false, t0.Add(-3*time.Hour))
	other := mkRun("attic", "success", true, t0.Add(-4*time.Hour))
	runs = append(runs, deploy, running, other)
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	n, err := s.TrimRule(ctx, "porch", 10)
	if err != nil || n != 90 {
		t.Fatalf("TrimRule = %d, %v; want 90", n, err)
	}
	n, err = s.TrimRule(ctx, "porch", 1)
	if err != nil || n != 10 {
		t.Fatalf("TrimRule(1) = %d, %v; want 10 (9 successes + the older failure)", n, err)
	}
	left, err := s.ListRuns(ctx, RunFilter{Rule: "porch", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range left {
		ids = append(ids, r.Status+"/"+r.Kind)
	}
	want := []string{"success/firing", "failed/firing", "success/deploy", "running/firing"}
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("left after trim = %v; want %v", ids, want)
	}
	if left[1].ID != fail.ID || left[0].ID != runs[len(runs)-4].ID {
		t.Fatalf("trim kept the wrong runs: %v", left)
	}
	if _, err := s.GetRun(ctx, other.ID); err != nil {
		t.Fatalf("other rule's run trimmed: %v", err)
	}
	if _, err := s.TrimRule(ctx, "porch", 0); !errors.Is(err, ErrInvalid) {
		t.Fatalf("TrimRule(0) = %v", err)
	}
}

func TestMarkInterrupted(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	a := mkRun("porch", StatusRunning, true, t0)
	a.Envelope = json.RawMessage(`{"run_id":"` + a.ID + `","outcome":{"ok":true,"status":"running"},"trace":{"level":"full","steps":[{"id":"s1"}]}}`)
	b := mkRun("porch", StatusRunning, false, t0.Add(time.Second))
	b.Envelope = nil
	done := mkRun("porch", "success", true, t0.Add(2*time.Second))
	if err := s.InsertRuns(ctx, []Run{a, b, done}); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Minute)
	n, err := s.MarkInterrupted(ctx, now)
	if err != nil || n != 2 {
		t.Fatalf("MarkInterrupted = %d, %v; want 2", n, err)
	}
	wantOutcome := `{"ok":false,"status":"interrupted","error":"` + InterruptedError + `"}`
	for _, c := range []struct {
		run  Run
		want string
	}{
		{a, `{"run_id":"` + a.ID + `","outcome":` + wantOutcome + `,"trace":{"level":"full","steps":[{"id":"s1"}]}}`},
		{b, `{"run_id":"` + b.ID + `","outcome":` + wantOutcome + `}`},
	} {
		got, err := s.GetRun(ctx, c.run.ID)
		if err != nil || got.Status != StatusInterrupted || got.OK || !got.Ended.Equal(now) {
			t.Fatalf("run %s = %+v, %v", c.run.ID, got, err)
		}
		if string(got.Envelope) != c.want {
			t.Errorf("envelope\n got %s\nwant %s", got.Envelope, c.want)
		}
	}
	if got, _ := s.GetRun(ctx, done.ID); got.Status != "success" || string(got.Envelope) != string(done.Envelope) {
		t.Fatalf("finished run touched: %+v", got)
	}
	if n, _ := s.MarkInterrupted(ctx, now); n != 0 {
		t.Fatalf("second MarkInterrupted = %d", n)
	}
}

func TestPurgeExpired(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	var runs []Run
	for i := range 2500 { // retention 1 h, as the engine writes them
		r := mkRun("porch", "success", true, t0.Add(time.Duration(i)*time.Millisecond))
		r.Expires = r.Ended.Add(time.Hour)
		runs = append(runs, r)
	}
	keep := mkRun("porch", "success", true, t0) // written under a longer retention
	keep.Expires = keep.Ended.Add(2 * time.Hour)
	forever := mkRun("porch", "success", true, t0)
	// Written under a shorter retention (5 min) late in the hour: expired
	// at the purge, invisible, purged once an hour old.
	short := mkRun("porch", "success", true, t0.Add(50*time.Minute))
	short.Expires = short.Ended.Add(5 * time.Minute)
	runs = append(runs, keep, forever, short)
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	if n, err := s.PurgeExpired(ctx, t0.Add(time.Hour), time.Hour); err != nil || n != 0 {
		t.Fatalf("PurgeExpired early = %d, %v", n, err)
	}
	at := t0.Add(time.Hour + 3*time.Second)
	if n, err := s.PurgeExpired(ctx, at, time.Hour); err != nil || n != 2500 {
		t.Fatalf("PurgeExpired = %d, %v; want 2500", n, err)
	}
	s.now = func() time.Time { return at }
	left, err := s.ListRuns(ctx, RunFilter{})
	if err != nil || len(left) != 2 {
		t.Fatalf("left = %d, %v; want 2 (keep, forever; the short one is expired)", len(left), err)
	}
	if n, err := s.PurgeExpired(ctx, t0.Add(2*time.Hour), time.Hour); err != nil || n != 1 {
		t.Fatalf("PurgeExpired of the short-retention run = %d, %v; want 1", n, err)
	}
}

func TestListRunsFiltersAndPagination(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	var runs []Run
	for i := range 250 {
		status, ok := "success", true
		if i%5 == 0 {
			status, ok = "failed", false
		}
		rule := "porch"
		if i%2 == 1 {
			rule = "attic"
		}
		// Every 10 runs share a start time: the id must break ties stably.
		r := mkRun(rule, status, ok, t0.Add(time.Duration(i/10)*time.Second))
		if i%7 == 0 {
			r.Kind, r.Principal = KindTest, "bob"
		}
		runs = append(runs, r)
	}
	if err := s.InsertRuns(ctx, runs); err != nil {
		t.Fatal(err)
	}
	f := false
	cases := []struct {
		name string
		f    RunFilter
		keep func(Run) bool
	}{
		{"all", RunFilter{}, func(Run) bool { return true }},
		{"rule", RunFilter{Rule: "attic"}, func(r Run) bool { return r.Rule == "attic" }},
		{"failed", RunFilter{OK: &f}, func(r Run) bool { return !r.OK }},
		{"status+rule", RunFilter{Rule: "porch", Status: "failed"}, func(r Run) bool { return r.Rule == "porch" && r.Status == "failed" }},
		{"kind+principal", RunFilter{Kind: KindTest, Principal: "bob"}, func(r Run) bool { return r.Kind == KindTest }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var want []string
			for _, r := range runs {
				if c.keep(r) {
					want = append(want, r.ID)
				}
			}
			sort.Slice(want, func(i, j int) bool { // newest first, id breaks ties
				ri, rj := runByID(runs, want[i]), runByID(runs, want[j])
				if !ri.Started.Equal(rj.Started) {
					return ri.Started.After(rj.Started)
				}
				return ri.ID > rj.ID
			})
			var got []string
			var pages [][]string
			f := c.f
			f.Limit = 7
			for page := 0; ; page++ {
				list, err := s.ListRuns(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if page == 0 {
					// New runs arriving between pages must not shift the pages.
					newer := mkRun("porch", "failed", false, t0.Add(time.Hour+time.Duration(page)*time.Second))
					newer.Kind, newer.Principal = KindTest, "bob"
					if err := s.UpsertRun(ctx, newer); err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { s.w.Exec(`DELETE FROM runs WHERE id = ?`, newer.ID) })
				}
				var ids []string
				for _, r := range list {
					got = append(got, r.ID)
					ids = append(ids, r.ID)
				}
				pages = append(pages, ids)
				if len(list) < f.Limit {
					break
				}
				f.Before = list[len(list)-1].ID
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("paged %d runs, want %d\n got %v\nwant %v", len(got), len(want), got, want)
			}
			// Back up with After: each newer page is the page before it.
			for k := len(pages) - 1; k > 0; k-- {
				if len(pages[k]) == 0 {
					continue
				}
				b := c.f
				b.Limit, b.After = 7, pages[k][0]
				list, err := s.ListRuns(ctx, b)
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, r := range list {
					ids = append(ids, r.ID)
				}
				if fmt.Sprint(ids) != fmt.Sprint(pages[k-1]) {
					t.Fatalf("newer than page %d:\n got %v\nwant %v", k, ids, pages[k-1])
				}
			}
		})
	}
	full, _ := s.ListRuns(ctx, RunFilter{Limit: 3})
	lean, err := s.ListRuns(ctx, RunFilter{Limit: 3, SkipEnvelope: true})
	if err != nil || len(lean) != 3 || lean[0].Envelope != nil || lean[0].ID != full[0].ID || full[0].Envelope == nil {
		t.Fatalf("SkipEnvelope = %+v, %v", lean, err)
	}
	if _, err := s.ListRuns(ctx, RunFilter{Before: "garbage"}); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("garbage cursor: %v", err)
	}
	if _, err := s.ListRuns(ctx, RunFilter{Before: full[2].ID, After: full[0].ID}); !errors.Is(err, ErrBadCursor) {
		t.Fatalf("both cursors: %v", err)
	}
	// A cursor run that was purged still pages by its id's time.
	gone := newRunID(t0.Add(2500 * time.Millisecond))
	list, err := s.ListRuns(ctx, RunFilter{Before: gone, Limit: 1000})
	if err != nil || len(list) != 30 {
		t.Fatalf("purged cursor: %d runs, %v; want 30", len(list), err)
	}
}

func runByID(runs []Run, id string) Run {
	for _, r := range runs {
		if r.ID == id {
			return r
		}
	}
	return Run{}
}

func TestConcurrentInsertsAndReads(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	const writers, batches, per = 4, 20, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers*batches+64)
	stop := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			for b := range batches {
				batch := make([]Run, per)
				for i := range batch {
					batch[i] = mkRun(fmt.Sprintf("rule%d", w), "success", true, t0.Add(time.Duration(b*per+i)*time.Millisecond))
				}
				if err := s.InsertRuns(ctx, batch); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var rg sync.WaitGroup
	for range 3 {
		rg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				list, err := s.ListRuns(ctx, RunFilter{Limit: 20})
				if err != nil {
					errs <- err
					return
				}
				if len(list) > 0 {
					if _, err := s.GetRun(ctx, list[0].ID); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var n int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM runs`).Scan(&n); err != nil || n != writers*batches*per {
		t.Fatalf("runs stored = %d, %v; want %d", n, err, writers*batches*per)
	}
}

func TestRunIDs(t *testing.T) {
	a := newRunID(t0)
	b := newRunID(t0.Add(time.Millisecond))
	if len(a) != 30 || a[:4] != "run_" || a >= b {
		t.Fatalf("ids %q, %q: want 30 chars, time-sorted", a, b)
	}
	if got, ok := RunIDTime(b); !ok || !got.Equal(t0.Add(time.Millisecond)) {
		t.Fatalf("RunIDTime = %v, %v", got, ok)
	}
	if id1, id2 := newRunID(t0), newRunID(t0); id1 == id2 {
		t.Fatal("two ids in the same millisecond collide")
	}
	for _, bad := range []string{"", "run_", "xyz_" + a[4:], "run_" + a[4:29] + "!", a + "0"} {
		if _, ok := RunIDTime(bad); ok {
			t.Errorf("RunIDTime(%q) accepted", bad)
		}
	}
	if id := NewRunID(); id[:4] != "run_" {
		t.Fatalf("NewRunID = %q", id)
	}
}

// TestListRunsByRuleWalksTheRuleIndex pins the query plan: a rule's runs
// come from runs_by_rule even when the principal (every run of the owner)
// and status are filtered too; walking the principal index instead made
// the web Rules page take seconds with 10,000 runs.
func TestListRunsByRuleWalksTheRuleIndex(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	for _, f := range []RunFilter{
		{Rule: "porch", Kind: KindFiring, Principal: "owner", Limit: 1},
		{Rule: "porch", Status: "failed", Principal: "owner"},
		{Rule: "porch", Principal: "owner", Before: newRunID(t0)},
	} {
		q, args, err := s.listRunsQuery(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := s.r.QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if got := strings.Join(plan, "; "); !strings.Contains(got, "runs_by_rule") {
			t.Errorf("%+v: plan %q does not use runs_by_rule", f, got)
		}
	}
	// Without a rule, a failure status walks the partial runs_by_status.
	q, args, err := s.listRunsQuery(ctx, RunFilter{Status: "failed", Principal: "owner"})
	if err != nil {
		t.Fatal(err)
	}
	var id, parent, unused int
	var detail string
	if err := s.r.QueryRowContext(ctx, "EXPLAIN QUERY PLAN "+q, args...).Scan(&id, &parent, &unused, &detail); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(detail, "runs_by_status") {
		t.Errorf("status=failed: plan %q does not use runs_by_status", detail)
	}
}

// TestInsertRunsTrimsInTheSameTransaction: trims ride along a batch, per
// status, and only for the rules listed.
func TestInsertRunsTrimsInTheSameTransaction(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	var first []Run
	for i := range 30 {
		first = append(first, mkRun("porch", "success", true, t0.Add(time.Duration(i)*time.Second)))
		first = append(first, mkRun("attic", "success", true, t0.Add(time.Duration(i)*time.Second)))
	}
	first = append(first, mkRun("porch", "failed", false, t0.Add(-time.Hour)))
	if err := s.InsertRuns(ctx, first); err != nil {
		t.Fatal(err)
	}
	next := []Run{mkRun("porch", "success", true, t0.Add(time.Hour))}
	if err := s.InsertRuns(ctx, next, WriteOptions{Trim: []string{"porch"}, KeepPerStatus: 5}); err != nil {
		t.Fatal(err)
	}
	count := func(rule, status string) int {
		l, err := s.ListRuns(ctx, RunFilter{Rule: rule, Status: status, Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		return len(l)
	}
	if p, f, a := count("porch", "success"), count("porch", "failed"), count("attic", ""); p != 5 || f != 1 || a != 30 {
		t.Fatalf("after trim: porch success %d (want 5), porch failed %d (want 1), attic %d (want 30)", p, f, a)
	}
	if _, err := s.GetRun(ctx, next[0].ID); err != nil {
		t.Fatalf("the batch's own run was trimmed: %v", err)
	}
	if err := s.InsertRuns(ctx, nil, WriteOptions{Trim: []string{"porch"}}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("trim without KeepPerStatus: %v", err)
	}
}

// A batch cancelled between rows stops there and lands nothing (its rows
// run under a context the driver does not watch; the batch checks it).
func TestInsertRunsCancelledMidBatchLandsNothing(t *testing.T) {
	s, _ := openTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var batch []Run
	for i := range 5 {
		batch = append(batch, mkRun("porch", "success", true, t0.Add(time.Duration(i)*time.Second)))
	}
	rows := 0
	err := s.InsertRuns(ctx, batch, WriteOptions{Yield: func() {
		if rows++; rows == 2 {
			cancel()
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("InsertRuns after cancel: %v, want context.Canceled", err)
	}
	if rows != 2 {
		t.Fatalf("%d rows written after the cancel, want the batch to stop at 2", rows)
	}
	l, err := s.ListRuns(context.Background(), RunFilter{Rule: "porch", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(l) != 0 {
		t.Fatalf("%d runs stored from a cancelled batch, want 0", len(l))
	}
}

// InsertRuns hands envelopes to the driver without copying them: the row
// must hold its own bytes (a writer reuses one buffer for a batch's
// envelopes), stored as TEXT, and repeated column values must not leak
// from one row into the next.
func TestInsertRunsEnvelopeBytesAreCopiedAsText(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	a := mkRun("porch", "success", true, t0)
	b := mkRun("attic", "failed", false, t0.Add(time.Second))
	b.Principal, b.Kind, b.Level = "bob", KindTest, "summary"
	arena := []byte(`{"run_id":"a"}{"run_id":"bb"}`)
	a.Envelope, b.Envelope = arena[:14:14], arena[14:]
	if err := s.InsertRuns(ctx, []Run{a, b}, WriteOptions{EncodedJSON: true}); err != nil {
		t.Fatal(err)
	}
	for i := range arena {
		arena[i] = 'x'
	}
	for _, want := range []struct {
		r   Run
		env string
	}{{a, `{"run_id":"a"}`}, {b, `{"run_id":"bb"}`}} {
		got, err := s.GetRun(ctx, want.r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Envelope) != want.env || got.Principal != want.r.Principal || got.Rule != want.r.Rule ||
			got.Kind != want.r.Kind || got.Status != want.r.Status || got.Level != want.r.Level || got.OK != want.r.OK {
			t.Errorf("run %s read back as %+v (envelope %s), want %+v (envelope %s)", want.r.ID, got, got.Envelope, want.r, want.env)
		}
		var typ string
		if err := s.w.QueryRowContext(ctx, `SELECT typeof(envelope) FROM runs WHERE id = ?`, want.r.ID).Scan(&typ); err != nil {
			t.Fatal(err)
		}
		if typ != "text" {
			t.Errorf("envelope stored as %s, want text", typ)
		}
	}
}
