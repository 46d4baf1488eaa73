package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// Run statuses the store itself writes or reads specially. The rest of the
// closed set lives in rules.RunStatuses; "running" is storage-internal (a
// firing recorded before it finished).
const (
	StatusRunning     = "running"
	StatusInterrupted = "interrupted"
)

// Run kinds.
const (
	KindDeploy = "deploy"
	KindTest   = "test"
	KindFiring = "firing"
	KindManual = "manual" // a program run once by hand (the web UI's controls)
)

// Run is one run record: the envelope exactly as returned on the inline door
// ({run_id, outcome, output, trace}), for the fetch door (spec §6.6).
type Run struct {
	ID        string
	Principal string
	Rule      string // "" for an inline program
	Ref       string
	Kind      string // KindDeploy, KindTest, KindFiring
	Status    string
	OK        bool
	Started   time.Time
	Ended     time.Time
	Level     string // trace level recorded
	Envelope  json.RawMessage
	Expires   time.Time // zero: no expiry (e.g. session retention, purged by the engine)
}

// RunFilter selects runs for ListRuns; zero fields do not filter.
type RunFilter struct {
	Rule      string
	Kind      string
	Status    string
	Principal string
	OK        *bool
	// Before is a pagination cursor: the ID of the last run of the previous
	// page. Only runs ordered after it (older) are returned.
	Before string
	// After is the other way: the ID of the first run of the current page.
	// Only runs ordered before it (newer) are returned: the Limit of them
	// closest to it, still newest first. At most one of Before and After.
	After string
	// Limit caps the page; <= 0 means DefaultRunLimit. The store sets no
	// upper bound: callers facing clients bound their own pages.
	Limit int
	// SkipEnvelope leaves Run.Envelope nil: listings rarely need the trace,
	// and reading it is about half the cost of a page.
	SkipEnvelope bool
}

// DefaultRunLimit is the ListRuns page size when RunFilter.Limit is unset.
const DefaultRunLimit = 50

// ErrBadCursor reports a RunFilter.Before that is neither a stored run nor a
// well-formed run id.
var ErrBadCursor = errors.New("storage: bad run cursor")

const runCols = `id, principal, rule, ref, kind, status, ok, started, ended, level, expires, envelope`

// runColsNoEnvelope selects NULL in the envelope's place so scanRun serves both.
const runColsNoEnvelope = `id, principal, rule, ref, kind, status, ok, started, ended, level, expires, NULL`

const upsertRunSQL = `INSERT INTO runs (` + runCols + `) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (id) DO UPDATE SET principal = excluded.principal, rule = excluded.rule,
		ref = excluded.ref, kind = excluded.kind, status = excluded.status, ok = excluded.ok,
		started = excluded.started, ended = excluded.ended, level = excluded.level,
		expires = excluded.expires, envelope = excluded.envelope`

// WriteOptions tune a batch write for a background writer.
type WriteOptions struct {
	// Yield is called between rows: a background writer passes
	// runtime.Gosched so a large batch never holds a processor for long.
	Yield func()
	// Trim lists rules to trim in the same transaction, after the rows
	// are written, keeping KeepPerStatus runs per status (see TrimRule):
	// one commit instead of one per rule (a trim per rule and commit made
	// a 1,000-rule house fall behind at 5,000 firings/s).
	Trim          []string
	KeepPerStatus int
	// MaxRuleBytes, when set, also bounds the bytes of each trimmed rule's
	// finished firings (see TrimRule); MaxPrincipalBytes those of each
	// principal in TrimPrincipals (see trimPrincipalSQL).
	MaxRuleBytes      int64
	TrimPrincipals    []string
	MaxPrincipalBytes int64
	// EncodedJSON says every envelope was produced by a JSON encoder (always
	// valid: encoding/json or pilotage.AppendJSON), so the store need not
	// parse it again: on a firing's path that
	// check costs about a fifth of the insert.
	EncodedJSON bool
}

func checkRun(r *Run, encoded bool) error {
	if r.ID == "" {
		return fmt.Errorf("%w: run needs an id", ErrInvalid)
	}
	if r.Started.IsZero() {
		return fmt.Errorf("%w: run %s has no start time", ErrInvalid, r.ID)
	}
	if encoded {
		return nil
	}
	return checkJSON("run "+r.ID+" envelope", r.Envelope)
}

// InsertRuns writes a batch of runs in one transaction. A run whose ID is
// already stored is replaced, so a firing first recorded as "running" can
// be finished through the same batch path. Either the whole batch lands or
// none of it.
func (s *Store) InsertRuns(ctx context.Context, runs []Run, opts ...WriteOptions) error {
	var o WriteOptions
	for _, x := range opts {
		o = x
	}
	_, err := s.WriteRuns(ctx, runs, o)
	return err
}

// WriteRuns is InsertRuns reporting how many stored firings its trims
// deleted.
func (s *Store) WriteRuns(ctx context.Context, runs []Run, o WriteOptions) (Trimmed, error) {
	if err := o.check(); err != nil {
		return Trimmed{}, err
	}
	if len(runs) == 0 && len(o.Trim) == 0 && len(o.TrimPrincipals) == 0 {
		return Trimmed{}, nil
	}
	for i := range runs {
		if err := checkRun(&runs[i], o.EncodedJSON); err != nil {
			return Trimmed{}, err
		}
	}
	// Prepare before BEGIN: the writer pool has one connection, which the
	// transaction holds.
	ps, err := s.stmt(ctx, s.w, upsertRunSQL)
	if err != nil {
		return Trimmed{}, s.wrote(ctx, fmt.Errorf("storage: insert runs: prepare: %w", err))
	}
	tr, err := s.prepareTrims(ctx, o)
	if err != nil {
		return Trimmed{}, s.wrote(ctx, fmt.Errorf("storage: insert runs: prepare trim: %w", err))
	}
	var got Trimmed
	err = s.inTx(ctx, fmt.Sprintf("insert %d runs", len(runs)), func(tx *sql.Tx) error {
		got = Trimmed{}
		if err := upsertRows(ctx, tx, ps, runs, o); err != nil {
			return err
		}
		return tr.run(ctx, tx, o, &got)
	})
	if err != nil && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
		// database/sql rolled the transaction back when ctx ended: what
		// ran next failed with "statement is closed" or "transaction has
		// already been committed or rolled back".
		err = fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return got, err
}

// upsertRows executes the prepared upsert for each run. Rows are executed
// under a context that cannot be cancelled, and the batch checks ctx
// between rows instead: the SQLite driver starts a goroutine per statement
// to watch a cancellable context (one per firing at thousands of firings a
// second), and a row is microseconds.
func upsertRows(ctx context.Context, tx *sql.Tx, ps *sql.Stmt, runs []Run, o WriteOptions) error {
	rowCtx := context.WithoutCancel(ctx)
	st := tx.StmtContext(rowCtx, ps)
	defer st.Close()
	var ra runArgBuf // one argument list for the batch
	for i := range runs {
		r := &runs[i]
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := st.ExecContext(rowCtx, ra.fill(r)...); err != nil {
			return fmt.Errorf("storage: insert run %s: %w", r.ID, err)
		}
		if o.Yield != nil {
			o.Yield()
		}
	}
	return nil
}

// UpsertRun writes one run, replacing any stored run with the same ID.
func (s *Store) UpsertRun(ctx context.Context, r Run) error {
	if err := checkRun(&r, false); err != nil {
		return err
	}
	st, err := s.stmt(ctx, s.w, upsertRunSQL)
	if err != nil {
		return s.wrote(ctx, fmt.Errorf("storage: upsert run %s: prepare: %w", r.ID, err))
	}
	var ra runArgBuf
	if _, err := st.ExecContext(ctx, ra.fill(&r)...); err != nil {
		return s.wrote(ctx, fmt.Errorf("storage: upsert run %s: %w", r.ID, err))
	}
	return s.wrote(ctx, nil)
}

// runArgBuf is the argument list of upsertRunSQL, reused from row to row
// of a batch: a text column whose value is the previous row's keeps that
// boxed value (principal, rule, kind, status and level mostly repeat).
type runArgBuf struct{ args [12]any }

// fill sets the arguments for r. The envelope is passed as a string over
// r.Envelope's bytes, without copying them: the driver copies a text
// argument when it binds it (modernc.org/sqlite bindText, libc.CString)
// and database/sql passes a string through unchanged, so the string does
// not outlive the statement's execution, during which the bytes must not
// change (they never do: a Run's envelope is not written after it is
// handed to the store). TEXT, not BLOB: see jsonArg.
func (a *runArgBuf) fill(r *Run) []any {
	a.text(0, r.ID)
	a.text(1, r.Principal)
	a.text(2, r.Rule)
	a.text(3, r.Ref)
	a.text(4, r.Kind)
	a.text(5, r.Status)
	a.args[6] = boolArg(r.OK)
	a.args[7] = r.Started.UnixNano()
	a.args[8] = timeArg(r.Ended)
	a.text(9, r.Level)
	a.args[10] = timeArg(r.Expires)
	a.args[11] = nil
	if len(r.Envelope) > 0 {
		a.args[11] = unsafe.String(unsafe.SliceData(r.Envelope), len(r.Envelope))
	}
	return a.args[:]
}

func (a *runArgBuf) text(i int, s string) {
	if prev, ok := a.args[i].(string); ok && prev == s {
		return
	}
	a.args[i] = s
}

func scanRun(row scanner) (Run, error) {
	var r Run
	var started int64
	var ended, expires sql.NullInt64
	var env []byte
	if err := row.Scan(&r.ID, &r.Principal, &r.Rule, &r.Ref, &r.Kind, &r.Status, &r.OK,
		&started, &ended, &r.Level, &expires, &env); err != nil {
		return Run{}, err
	}
	r.Started = time.Unix(0, started).UTC()
	r.Ended, r.Expires = timeVal(ended), timeVal(expires)
	r.Envelope = jsonVal(env)
	return r, nil
}

// GetRun returns the run with id, or ErrNotFound if it is unknown or has
// expired (expired and unknown are indistinguishable, spec §6.6).
func (s *Store) GetRun(ctx context.Context, id string) (Run, error) {
	v, err := s.getRun(ctx, id, `SELECT `+runCols+` FROM runs
		WHERE id = ? AND (expires IS NULL OR expires > ?)`, id, s.now().UnixNano())
	return v, s.fault(ctx, err)
}

// GetRunOf is GetRun for one principal's runs: another principal's run is
// ErrNotFound like an unknown one, and costs what an unknown one costs. The
// statement compares the principal before the envelope (the last, big
// column, in overflow pages) is extracted, so neither a foreign run's
// existence nor its size shows in the time a lookup takes.
func (s *Store) GetRunOf(ctx context.Context, id, principal string) (Run, error) {
	v, err := s.getRun(ctx, id, `SELECT `+runCols+` FROM runs
		WHERE id = ? AND principal = ? AND (expires IS NULL OR expires > ?)`, id, principal, s.now().UnixNano())
	return v, s.fault(ctx, err)
}

// EnvelopeReads counts the run envelopes GetRun and GetRunOf have read
// (diagnostics; tests assert which lookups read one).
func (s *Store) EnvelopeReads() uint64 { return s.envReads.Load() }

func (s *Store) getRun(ctx context.Context, id, query string, args ...any) (Run, error) {
	row, err := s.queryRow(ctx, query, args...)
	if err != nil {
		return Run{}, fmt.Errorf("storage: get run %s: %w", id, err)
	}
	r, err := scanRun(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("storage: get run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Run{}, fmt.Errorf("storage: get run %s: %w", id, err)
	}
	if len(r.Envelope) > 0 {
		s.envReads.Add(1)
	}
	return r, nil
}

// ListRuns returns unexpired runs matching f, newest first (by start time,
// then ID). Pass the last ID of a page as f.Before to get the next page;
// pages stay stable while new runs arrive.
func (s *Store) ListRuns(ctx context.Context, f RunFilter) ([]Run, error) {
	v, err := s.listRuns(ctx, f)
	return v, s.fault(ctx, err)
}

func (s *Store) listRuns(ctx context.Context, f RunFilter) ([]Run, error) {
	q, args, err := s.listRunsQuery(ctx, f)
	if err != nil {
		return nil, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultRunLimit
	}
	st, err := s.stmt(ctx, s.r, q)
	if err != nil {
		return nil, fmt.Errorf("storage: list runs: %w", err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("storage: list runs: %w", err)
	}
	defer rows.Close()
	out := make([]Run, 0, min(limit, 64))
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, fmt.Errorf("storage: list runs: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: list runs: %w", err)
	}
	if f.After != "" {
		slices.Reverse(out)
	}
	return out, nil
}

// listRunsQuery is ListRuns' statement and arguments.
func (s *Store) listRunsQuery(ctx context.Context, f RunFilter) (string, []any, error) {
	where, args := s.runFilterTerms(f)
	where, args, err := s.runCursorTerms(ctx, f, where, args)
	if err != nil {
		return "", nil, err
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultRunLimit
	}
	args = append(args, limit)
	cols := runCols
	if f.SkipEnvelope {
		cols = runColsNoEnvelope
	}
	order := ` ORDER BY started DESC, id DESC LIMIT ?`
	if f.After != "" {
		order = ` ORDER BY started ASC, id ASC LIMIT ?` // the closest newer runs; ListRuns reverses them
	}
	q := `SELECT ` + cols + ` FROM runs WHERE ` + strings.Join(where, " AND ") + order
	return q, args, nil
}

// runFilterTerms are the WHERE terms of f's fields other than the cursors.
func (s *Store) runFilterTerms(f RunFilter) (where []string, args []any) {
	where, args = append(where, "(expires IS NULL OR expires > ?)"), append(args, s.now().UnixNano())
	// With a rule, the rule's index is the one to walk: "+col" keeps the
	// planner off the principal and status indexes, which also deliver
	// rows in start order and, without statistics, look as good (walking
	// every run of the owner to find one rule's latest took seconds).
	other := ""
	if f.Rule != "" {
		other = "+"
	}
	for _, c := range []struct{ col, val string }{
		{"rule", f.Rule}, {"kind", f.Kind}, {other + "status", f.Status}, {other + "principal", f.Principal},
	} {
		if c.val != "" {
			where, args = append(where, c.col+" = ?"), append(args, c.val)
		}
	}
	if f.Status != "" && f.Status != "success" {
		// Lets the planner use runs_by_status, which holds only the
		// rows this literal term describes (migration 4).
		where = append(where, "status <> 'success'")
	}
	if f.OK != nil {
		where, args = append(where, "ok = ?"), append(args, boolArg(*f.OK))
	}
	return where, args
}

// runCursorTerms adds the terms of f's Before or After cursor.
func (s *Store) runCursorTerms(ctx context.Context, f RunFilter, where []string, args []any) ([]string, []any, error) {
	if f.Before != "" && f.After != "" {
		return nil, nil, fmt.Errorf("%w: both before and after cursors", ErrBadCursor)
	}
	if f.After != "" {
		started, err := s.cursorStart(ctx, f.After)
		if err != nil {
			return nil, nil, err
		}
		where = append(where, "started >= ? AND (started > ? OR id > ?)")
		args = append(args, started, started, f.After)
	}
	if f.Before != "" {
		started, err := s.cursorStart(ctx, f.Before)
		if err != nil {
			return nil, nil, err
		}
		// Same as started < s OR (started = s AND id < c), written so the
		// planner bounds the index range rather than scanning from the start.
		where = append(where, "started <= ? AND (started < ? OR id < ?)")
		args = append(args, started, started, f.Before)
	}
	return where, args, nil
}

// cursorStart resolves a cursor run id to its start time. A cursor run
// that has since been purged falls back to the time encoded in its id, so
// paging through a trimmed history does not fail.
func (s *Store) cursorStart(ctx context.Context, id string) (int64, error) {
	var started int64
	row, err := s.queryRow(ctx, `SELECT started FROM runs WHERE id = ?`, id)
	if err == nil {
		err = row.Scan(&started)
	}
	if err == nil {
		return started, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("storage: list runs: resolve cursor %s: %w", id, err)
	}
	t, ok := RunIDTime(id)
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrBadCursor, id)
	}
	return t.UnixNano(), nil
}

// purgeBatch bounds each purge transaction so a large backlog never holds
// the write lock for long.
const purgeBatch = 1000

// PurgeExpired deletes runs and idempotency keys whose expiry is at or
// before now, in bounded batches, and returns how many records went.
// minAge is the retention runs are written with: a run expires no earlier
// than minAge after it started, so only runs started before now - minAge
// are looked at (walking runs_by_start; runs have no expiry index). A run
// written under a longer retention than minAge is kept until it expires; one
// written under a shorter one is invisible once expired (every read checks
// the expiry) and purged once it is minAge old.
func (s *Store) PurgeExpired(ctx context.Context, now time.Time, minAge time.Duration) (int, error) {
	total := 0
	for _, p := range []struct {
		table, q string
		args     []any
	}{
		{"runs", `DELETE FROM runs WHERE rowid IN (SELECT rowid FROM runs
			WHERE started <= ? AND expires IS NOT NULL AND expires <= ? LIMIT ?)`,
			[]any{now.Add(-max(minAge, 0)).UnixNano(), now.UnixNano(), purgeBatch}},
		{"idempotency", `DELETE FROM idempotency WHERE rowid IN (SELECT rowid FROM idempotency
			WHERE expires IS NOT NULL AND expires <= ? LIMIT ?)`,
			[]any{now.UnixNano(), purgeBatch}},
	} {
		for {
			res, err := s.w.ExecContext(ctx, p.q, p.args...)
			if err != nil {
				return total, s.wrote(ctx, fmt.Errorf("storage: purge expired %s: %w", p.table, err))
			}
			n, err := res.RowsAffected()
			if err != nil {
				return total, s.wrote(ctx, fmt.Errorf("storage: purge expired %s: %w", p.table, err))
			}
			_ = s.wrote(ctx, nil)
			total += int(n)
			if n < purgeBatch {
				break
			}
		}
	}
	return total, nil
}

// InterruptedError is the outcome error MarkInterrupted writes.
const InterruptedError = "the server stopped while the run was in progress"

// MarkInterrupted turns every run still "running" (left by a crash or an
// unclean stop) into "interrupted" with ok false and ended at now, and
// rewrites the outcome member of its envelope to match. Other envelope
// members are kept; an envelope that is not a JSON object is replaced by
// {run_id, outcome}.
func (s *Store) MarkInterrupted(ctx context.Context, now time.Time) (int, error) {
	res, err := s.w.ExecContext(ctx, `UPDATE runs SET status = ?1, ok = 0, ended = ?2,
		envelope = CASE WHEN json_valid(envelope) AND json_type(envelope) = 'object'
			THEN json_set(envelope, '$.outcome', json_object('ok', json('false'), 'status', ?1, 'error', ?3))
			ELSE json_object('run_id', id, 'outcome', json_object('ok', json('false'), 'status', ?1, 'error', ?3))
		END
		WHERE status = ?4`, StatusInterrupted, now.UnixNano(), InterruptedError, StatusRunning)
	if err != nil {
		return 0, s.wrote(ctx, fmt.Errorf("storage: mark interrupted runs: %w", err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, s.wrote(ctx, fmt.Errorf("storage: mark interrupted runs: %w", err))
	}
	return int(n), s.wrote(ctx, nil)
}
