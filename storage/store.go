// Package storage owns Pilothouse's SQLite database: schema migrations,
// promoted programs with their baselines, installed rules, run records with
// retention, idempotency keys, pending timers and a small settings table.
package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Sentinel errors; every returned error wraps one of these or the driver's.
var (
	// ErrNotFound reports that the requested record does not exist (or has
	// expired).
	ErrNotFound = errors.New("storage: not found")
	// ErrConflict reports that a record exists with different immutable
	// content: an idempotency key with another hash, or a program ref with
	// another body.
	ErrConflict = errors.New("storage: conflict")
	// ErrSchemaTooNew reports a database migrated by a newer binary.
	ErrSchemaTooNew = errors.New("storage: database schema is newer than this binary")
	// ErrInvalid reports a record the store refuses to write.
	ErrInvalid = errors.New("storage: invalid record")
)

// FileName is the database file created inside the data folder.
const FileName = "pilothouse.db"

const (
	busyTimeoutMs = 5000
	readConns     = 4
)

// Store is the SQLite-backed store. All writes go through one connection
// (SQLite has one writer anyway; queueing in database/sql is cheaper than
// SQLITE_BUSY retries), reads go through a small read-only pool that WAL
// lets run alongside the writer.
type Store struct {
	w, r *sql.DB
	now  func() time.Time // clock for expiry checks on reads; tests swap it
	busy time.Duration    // the busy timeout; also a request's wait for the writer (FailFast)

	stmtMu sync.Mutex
	stmts  map[stmtKey]*sql.Stmt // prepared hot-path statements; preparing costs more than running

	health writeHealth

	closeOnce sync.Once
	closeErr  error

	envReads atomic.Uint64 // run envelopes read by id (EnvelopeReads)
}

type stmtKey struct {
	db    *sql.DB
	query string
}

// stmt returns a prepared statement for query on db, preparing it once.
// Never call it for s.w inside a write transaction: preparing needs the
// writer's only connection.
// Queries are built from constants (ListRuns has a bounded set of shapes),
// so the cache stays small.
func (s *Store) stmt(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	s.stmtMu.Lock()
	defer s.stmtMu.Unlock()
	k := stmtKey{db, query}
	if st, ok := s.stmts[k]; ok {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if s.stmts == nil {
		s.stmts = make(map[stmtKey]*sql.Stmt)
	}
	s.stmts[k] = st
	return st, nil
}

// queryRow runs a cached read statement returning one row.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) (*sql.Row, error) {
	st, err := s.stmt(ctx, s.r, query)
	if err != nil {
		return nil, err
	}
	return st.QueryRowContext(ctx, args...), nil
}

// Options tune how a Store is opened; the zero value is the default.
type Options struct {
	// BusyTimeout is how long a statement waits for another connection's
	// lock on the database before it fails (default 5 s).
	BusyTimeout time.Duration
}

// Open creates dir if needed, opens dir/pilothouse.db and applies pending
// schema migrations.
func Open(ctx context.Context, dir string) (*Store, error) {
	return open(ctx, dir, readConns, Options{})
}

// OpenWith is Open with options.
func OpenWith(ctx context.Context, dir string, o Options) (*Store, error) {
	return open(ctx, dir, readConns, o)
}

// open is Open with the size of the read pool; readers == 0 sends reads
// through the single writer connection too (kept to measure the split).
func open(ctx context.Context, dir string, readers int, o Options) (*Store, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("storage: create data folder: %w", err)
	}
	abs, err := filepath.Abs(filepath.Join(dir, FileName))
	if err != nil {
		return nil, fmt.Errorf("storage: resolve database path: %w", err)
	}
	busy := time.Duration(busyTimeoutMs) * time.Millisecond
	if o.BusyTimeout > 0 {
		busy = o.BusyTimeout
	}
	w, err := openDB(abs, false, busy)
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	if err := migrate(ctx, w, migrations); err != nil {
		w.Close()
		return nil, err
	}
	if readers == 0 {
		st := &Store{w: w, r: w, now: time.Now, busy: busy}
		st.health.init()
		return st, nil
	}
	r, err := openDB(abs, true, busy)
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	if err := r.PingContext(ctx); err != nil {
		w.Close()
		r.Close()
		return nil, fmt.Errorf("storage: open read pool: %w", err)
	}
	st := &Store{w: w, r: r, now: time.Now, busy: busy}
	st.health.init()
	return st, nil
}

// openDB opens one pool on the database file. The path goes through a
// file: URI so that characters such as '?' or '#' in the folder name are
// escaped rather than parsed as parameters.
func openDB(path string, readOnly bool, busy time.Duration) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busy.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	} else {
		// BEGIN IMMEDIATE: a transaction that reads then writes must take
		// the write lock up front, or it can fail with SQLITE_BUSY on upgrade.
		q.Set("_txlock", "immediate")
		// The writer keeps the index pages the firing recorder touches
		// (one leaf per rule fired) cached.
		q.Add("_pragma", "cache_size(-16384)")
		// A statement that writes many rows (the history writer's chunks)
		// keeps a statement journal of the pages it touches; past 64 KiB
		// SQLite spills it to a temporary file, a pwrite per page. The
		// writer's statements are bounded chunks, so it keeps its
		// temporary storage in memory (the read pool, which sorts what
		// users ask for, keeps SQLite's default).
		q.Add("_pragma", "temp_store(MEMORY)")
		// A checkpoint copies the pages written since the last one back to
		// the database; the recorders rewrite the same index leaves batch
		// after batch, so checkpointing every 4,000 pages instead of
		// SQLite's 1,000 copies such a page up to four times less often
		// (BenchmarkInsertRuns100).
		q.Add("_pragma", "wal_autocheckpoint(4000)")
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: q.Encode()}
	dsn := u.String()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", path, err)
	}
	return db, nil
}

// SetClock replaces the wall clock the store uses to hide expired runs and
// idempotency keys on reads (GetRun, ListRuns, GetIdem, PutIdem); wire it to
// the engine's clock so both agree on what has expired. Call it before the
// Store is shared between goroutines.
func (s *Store) SetClock(now func() time.Time) {
	if now != nil {
		s.now = now
	}
}

// Close closes the database. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.health.stopProbe()
		// optimize refreshes the planner's statistics where they have
		// drifted; cheap, and recommended by SQLite before closing.
		_, optErr := s.w.Exec(`PRAGMA optimize`)
		s.stmtMu.Lock()
		for _, st := range s.stmts {
			st.Close()
		}
		s.stmts = nil
		s.stmtMu.Unlock()
		var rErr error
		if s.r != s.w {
			rErr = s.r.Close()
		}
		s.closeErr = errors.Join(optErr, rErr, s.w.Close())
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("storage: close: %w", s.closeErr)
		}
	})
	return s.closeErr
}

// inTx runs fn in one write transaction, committing on success.
func (s *Store) inTx(ctx context.Context, what string, fn func(*sql.Tx) error) error {
	conn, err := s.writer(ctx, what)
	if err != nil {
		return s.fault(ctx, err)
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return s.wrote(ctx, fmt.Errorf("storage: %s: begin: %w", what, err))
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return s.wrote(ctx, err)
	}
	if err := tx.Commit(); err != nil {
		return s.wrote(ctx, fmt.Errorf("storage: %s: commit: %w", what, err))
	}
	return s.wrote(ctx, nil)
}

// Time columns hold Unix nanoseconds; the zero time is NULL.

func timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func timeVal(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64).UTC()
}

// jsonArg passes JSON as TEXT: SQLite's json functions read a BLOB as JSONB,
// which would garble the envelope rewrite in MarkInterrupted.
func jsonArg(raw []byte) any {
	if len(raw) == 0 {
		return nil
	}
	return string(raw)
}

func jsonVal(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func checkJSON(what string, raw []byte) error {
	if len(raw) > 0 && !json.Valid(raw) {
		return fmt.Errorf("%w: %s is not valid JSON", ErrInvalid, what)
	}
	return nil
}

func boolArg(b bool) int {
	if b {
		return 1
	}
	return 0
}
