package recorder

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
	sqlite "modernc.org/sqlite"
)

// stall is what the runs table's insert trigger does (stalledStore): each
// row sleeps perRow, and the first fails writes are refused (fails < 0:
// every write).
var stall struct {
	fails  atomic.Int64
	perRow atomic.Int64
}

func init() {
	sqlite.MustRegisterScalarFunction("recorder_test_stall", 0, func(*sqlite.FunctionContext, []driver.Value) (driver.Value, error) {
		time.Sleep(time.Duration(stall.perRow.Load()))
		for {
			n := stall.fails.Load()
			if n == 0 {
				return int64(0), nil
			}
			if n < 0 || stall.fails.CompareAndSwap(n, n-1) {
				return int64(1), nil // the write's first row: its transaction is refused
			}
		}
	})
}

// stalledStore is a store whose inserts into runs call recorder_test_stall.
func stalledStore(t *testing.T, fails int64, perRow time.Duration) (*storage.Store, *sql.DB) {
	t.Helper()
	dir := t.TempDir()
	store, err := storage.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	db, err := sql.Open("sqlite", filepath.Join(dir, storage.FileName))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TRIGGER stall BEFORE INSERT ON runs WHEN recorder_test_stall()
		BEGIN SELECT RAISE(ABORT, 'refused'); END`); err != nil {
		t.Fatal(err)
	}
	stall.fails.Store(fails)
	stall.perRow.Store(int64(perRow))
	t.Cleanup(func() { stall.fails.Store(0); stall.perRow.Store(0) })
	return store, db
}

// TestFailedBatchWrittenAgainInChunks: a batch whose transaction fails is
// written again in chunks, each tried again when it fails, and only what
// the database still refuses is counted failed. In the attacker's burst
// 3,000 firings' transaction ran past its deadline twice (the recorder's
// thread got a few percent of a core) and 71 of the owner's 113 firings
// were lost; before, a batch refused twice was lost whole.
func TestFailedBatchWrittenAgainInChunks(t *testing.T) {
	const n = 1000
	short := writeLimits{write: 200 * time.Millisecond, chunk: 64,
		retries: []time.Duration{3 * time.Second, 10 * time.Second, 30 * time.Second}}
	for _, tc := range []struct {
		name          string
		fails         int64
		perRow        time.Duration
		limits        *writeLimits
		written, lost uint64
		log           string
	}{
		{name: "refused twice", fails: 2, written: n, log: "refused"},
		{name: "past its deadline", perRow: time.Millisecond, limits: &short, written: n, log: "deadline exceeded"},
		{name: "always refused", fails: -1, lost: n, log: "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, db := stalledStore(t, tc.fails, tc.perRow)
			var logs testutil.LockedBuffer
			rec := New(store, slog.New(slog.NewTextHandler(&logs, nil)), 50)
			if tc.limits != nil {
				rec.limits = *tc.limits
			}
			announced := 0
			rec.Announce = func(*storage.Run) { announced++ }
			t0 := time.Now()
			for i := range n { // queued before the writer starts: one batch
				rec.AddItem(firingItem(fmt.Sprint("rule", i%100), rules.StatusSuccess, t0.Add(time.Duration(i)), false))
			}
			rec.Start()
			defer rec.Close()
			rec.Flush()
			var stored uint64
			if err := db.QueryRow(`SELECT count(*) FROM runs`).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			st := rec.Stats()
			if stored != tc.written || st.Written != tc.written || st.Failed != tc.lost || uint64(announced) != tc.written {
				t.Fatalf("%d stored, %d announced, stats %+v; want %d written, %d failed", stored, announced, st, tc.written, tc.lost)
			}
			if !strings.Contains(logs.String(), tc.log) {
				t.Fatalf("log does not say %q:\n%s", tc.log, logs.String())
			}
		})
	}
}

// TestTrimsOfARetriedBatchRunLater: a batch written again in chunks
// leaves its trims (they ride one transaction, and a principal's scans
// all its firings) to a later batch, which runs them.
func TestTrimsOfARetriedBatchRunLater(t *testing.T) {
	store, _ := stalledStore(t, 2, 0)
	const keep = 5
	t0 := time.Now()
	old := firingItem("hot", rules.StatusSuccess, t0.Add(-time.Minute), true) // what the trim deletes
	stall.fails.Store(0)
	if err := store.InsertRuns(context.Background(), []storage.Run{old.Run}); err != nil {
		t.Fatal(err)
	}
	stall.fails.Store(2)
	rec := New(store, quiet(), keep)
	for i := range 20 { // past keep: superseded, and the rule is trimmed with the batch
		rec.AddItem(firingItem("hot", rules.StatusSuccess, t0.Add(time.Duration(i)*time.Millisecond), true))
	}
	rec.Start()
	defer rec.Close()
	rec.Flush()
	if n := len(countRuns(t, store, storage.RunFilter{Rule: "hot"})); n != keep+1 {
		t.Fatalf("hot firings stored: %d, want the newest %d and the old one, not trimmed yet", n, keep)
	}
	if st := rec.Stats(); st.Failed != 0 || st.Written != keep || st.Trimmed != 0 {
		t.Fatalf("stats %+v, want %d written, none failed or trimmed", st, keep)
	}
	// The trim is due with the first batch trimEvery after the last.
	testutil.Eventually(t, trimEvery+15*time.Second, "the deferred trim", func() bool {
		rec.AddItem(firingItem("other", rules.StatusSuccess, time.Now(), true))
		rec.Flush()
		return len(countRuns(t, store, storage.RunFilter{Rule: "hot"})) == keep
	})
	if st := rec.Stats(); st.Failed != 0 || st.Trimmed == 0 {
		t.Fatalf("stats %+v, want the trim counted, none failed", st)
	}
}
