package storage

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// State history: every change of a state entry, one row each, in
// insertion order (the rowid), with the entity as a small integer
// (history_entities) and the time in Unix milliseconds. A number is kept
// in num, any other value as JSON text in val. Numeric changes are also
// summed into 5-minute buckets (history_5m: count, low, high, total), so a
// week of a sensor reporting every ten seconds is read as 2,016 summaries
// instead of 60,480 rows, and survives the raw rows' size bound.
//
// The raw table is bounded by a row count: rowids grow with every insert,
// so max(rowid) - min(rowid) bounds the rows, and the oldest go first;
// and by bytes the same way (history_bytes.go).
// Both tables are purged by age (PurgeHistory). Each entity's latest value
// and since when it has held it are kept apart (history_last, see
// histlast.go), whatever the bound and the age.

// HistoryBucketMS is the width of a stored summary bucket, in milliseconds.
const HistoryBucketMS = int64(5 * time.Minute / time.Millisecond)

// HistoryPoint is one recorded change of a state entry.
type HistoryPoint struct {
	Entity string
	T      time.Time
	// IsNum: the value is the number Num; else JSON holds it.
	IsNum bool
	Num   float64
	JSON  string
}

// HistoryWrite tunes WriteHistory for a background writer.
type HistoryWrite struct {
	// MaxRows bounds the raw table; 0 = unbounded. Each write deletes at
	// most trimChunk of the oldest rows, so a lowered bound is reached
	// over a few batches rather than in one long transaction.
	MaxRows int
	// MaxBytes bounds the raw table's bytes (history_bytes.go) the same
	// way; 0 = unbounded.
	MaxBytes int64
	// Yield is called between statements (runtime.Gosched for a
	// background writer, as WriteOptions.Yield).
	Yield func()
	// IDs, when set, keeps entity ids from write to write (one writer's).
	IDs *HistoryIDs
	// Sums, when set, collects the batch's 5-minute summaries instead of
	// writing them, until a write with FlushSums: a writer that flushes
	// them every 30 s writes a summary row per entity per 30 s rather than
	// per batch. Nil: the batch's summaries are written with it.
	Sums      *HistorySums
	FlushSums bool
}

// HistorySums are 5-minute summaries not written yet (one writer's).
type HistorySums struct{ m map[bucketKey]*bucketAgg }

// Len is how many summary rows are waiting.
func (h *HistorySums) Len() int { return len(h.m) }

// HistoryIDs caches the entity ids WriteHistory resolved (entities are
// never deleted, so an id stays valid). Not safe for concurrent use.
type HistoryIDs struct{ m map[string]int64 }

// trimChunk bounds the rows one WriteHistory deletes to honour MaxRows.
const trimChunk = 20000

// Rows go histChunk to a statement (summaries sumChunk): a statement's
// overhead and allocations are paid once per chunk, not once per row.
const (
	histChunk = 64
	sumChunk  = 32
)

const (
	histEntitySQL = `INSERT INTO history_entities (entity) VALUES (?)
		ON CONFLICT (entity) DO UPDATE SET entity = excluded.entity RETURNING id`
	histInsertSQL = `INSERT INTO history (entity, t, num, val, seq, vcounts, bpos) VALUES `
	histRowSQL    = `(?, ?, ?, ?, ?, ?, ?)`
	histBucketSQL = `INSERT INTO history_5m (entity, bucket, n, lo, hi, total) VALUES `
	histSumSQL    = `(?, ?, ?, ?, ?, ?)`
	histUpsertSQL = ` ON CONFLICT (entity, bucket) DO UPDATE SET n = n + excluded.n, lo = min(lo, excluded.lo),
		hi = max(hi, excluded.hi), total = total + excluded.total`
)

// histStatements are WriteHistory's statements: the entity upsert, one
// row and a chunk of rows of the changes and of the summaries, the
// last-change upsert and read.
var histStatements = [7]string{
	histEntitySQL,
	histInsertSQL + histRowSQL,
	histInsertSQL + histRowSQL + strings.Repeat(", "+histRowSQL, histChunk-1),
	histBucketSQL + histSumSQL + histUpsertSQL,
	histBucketSQL + histSumSQL + strings.Repeat(", "+histSumSQL, sumChunk-1) + histUpsertSQL,
	histLastSQL,
	histLastReadSQL,
}

type bucketKey struct {
	entity int64
	bucket int64
}

type bucketAgg struct {
	n             int64
	lo, hi, total float64
}

// HistoryWritten is what a WriteHistory did.
type HistoryWritten struct {
	// Rows is the changes written; Same the points not written because
	// their value was their entity's latest (not a change).
	Rows, Same int
	// Trimmed and TrimmedForBytes are the old rows deleted to honour
	// MaxRows and MaxBytes.
	Trimmed, TrimmedForBytes int
}

// WriteHistory stores the changes of a batch in one transaction, with
// their 5-minute summaries, and trims the raw table to o.MaxRows and
// o.MaxBytes. It is the one judge of what a change is: a point whose
// value is its entity's latest (history_last, or the batch's point
// before it) is not written, so a value seen again after a restart is no
// new point.
func (s *Store) WriteHistory(ctx context.Context, pts []HistoryPoint, o HistoryWrite) (HistoryWritten, error) {
	var w HistoryWritten
	if len(pts) == 0 && (o.Sums == nil || !o.FlushSums || o.Sums.Len() == 0) {
		return w, nil
	}
	var ps [7]*sql.Stmt
	for i, q := range histStatements {
		st, err := s.stmt(ctx, s.w, q)
		if err != nil {
			return w, s.wrote(ctx, fmt.Errorf("storage: write history: prepare: %w", err))
		}
		ps[i] = st
	}
	if o.IDs == nil {
		o.IDs = &HistoryIDs{}
	}
	if o.Sums == nil {
		o.Sums, o.FlushSums = &HistorySums{}, true
	}
	var fresh map[string]int64
	batch := map[bucketKey]*bucketAgg{}
	err := s.inTx(ctx, fmt.Sprintf("write %d history rows", len(pts)), func(tx *sql.Tx) error {
		var err error
		w, fresh, err = writeHistoryTx(ctx, tx, ps, pts, batch, o)
		return err
	})
	if err != nil {
		return HistoryWritten{}, err
	}
	o.IDs.keep(fresh)
	if o.FlushSums {
		clear(o.Sums.m)
	} else {
		o.Sums.merge(batch)
	}
	return w, nil
}

// writeHistoryTx is WriteHistory's transaction: the batch's changes are
// written and the raw table trimmed; fresh is the entity ids it made.
func writeHistoryTx(ctx context.Context, tx *sql.Tx, ps [7]*sql.Stmt, pts []HistoryPoint, batch map[bucketKey]*bucketAgg, o HistoryWrite) (w HistoryWritten, fresh map[string]int64, err error) {
	rowCtx := context.WithoutCancel(ctx) // as InsertRuns: no watcher goroutine per row
	var st [7]*sql.Stmt
	for i := range ps {
		st[i] = tx.StmtContext(rowCtx, ps[i])
		defer st[i].Close()
	}
	if fresh, err = o.IDs.resolve(rowCtx, st[0], pts); err != nil {
		return w, nil, err
	}
	idOf := o.IDs.idOf(fresh)
	changes, err := changesOnly(rowCtx, st[6], pts, idOf)
	if err != nil {
		return w, nil, err
	}
	w.Rows, w.Same = len(changes), len(pts)-len(changes)
	seqs, err := assignSeqs(rowCtx, tx, changes, idOf)
	if err != nil {
		return w, nil, err
	}
	end, err := historyEnd(rowCtx, tx)
	if err != nil {
		return w, nil, err
	}
	if end, err = writeHistoryRows(ctx, rowCtx, st, changes, seqs, idOf, batch, end, o); err != nil {
		return w, nil, err
	}
	if err := writeLastChanges(rowCtx, st[5], changes, idOf, seqs); err != nil {
		return w, nil, err
	}
	if err := seqs.writeValues(rowCtx, tx); err != nil {
		return w, nil, err
	}
	if w.Trimmed, err = trimHistory(rowCtx, tx, o.MaxRows); err != nil {
		return w, nil, err
	}
	w.TrimmedForBytes, err = trimHistoryBytes(rowCtx, tx, o.MaxBytes, end)
	return w, fresh, err
}

// resolve creates the ids of the batch's entities it does not know yet;
// they are kept (keep) once the transaction commits.
func (c *HistoryIDs) resolve(ctx context.Context, st *sql.Stmt, pts []HistoryPoint) (map[string]int64, error) {
	var fresh map[string]int64
	for i := range pts {
		e := pts[i].Entity
		if _, ok := c.m[e]; ok {
			continue
		}
		if _, ok := fresh[e]; ok {
			continue
		}
		var id int64
		if err := st.QueryRowContext(ctx, e).Scan(&id); err != nil {
			return nil, fmt.Errorf("storage: write history: entity %s: %w", e, err)
		}
		if fresh == nil {
			fresh = map[string]int64{}
		}
		fresh[e] = id
	}
	return fresh, nil
}

// idOf resolves an entity's id from the cache or the batch's fresh ids.
func (c *HistoryIDs) idOf(fresh map[string]int64) func(string) int64 {
	return func(e string) int64 {
		if v, ok := c.m[e]; ok {
			return v
		}
		return fresh[e]
	}
}

func (c *HistoryIDs) keep(fresh map[string]int64) {
	if c.m == nil {
		c.m = make(map[string]int64, len(fresh))
	}
	for e, id := range fresh {
		c.m[e] = id
	}
}

// writeHistoryRows inserts the rows from end on in the running sum of
// their bytes, summing their numbers into batch, and with o.FlushSums
// upserts the pending sums and batch's (st: see histStatements). It
// returns the last row's end. The caller keeps batch's sums once the
// transaction commits: a failed write changes no sum.
func writeHistoryRows(ctx, rowCtx context.Context, st [7]*sql.Stmt, pts []HistoryPoint, seqs *histSeqs, id func(string) int64, batch map[bucketKey]*bucketAgg, end int64, o HistoryWrite) (int64, error) {
	err := execChunks(ctx, rowCtx, st[1], st[2], len(pts), histChunk, func(args []any, i int) []any {
		args = append(appendHistoryRow(args, pts[i], id(pts[i].Entity), batch), seqs.seq[i], seqs.vcounts[i], end)
		end += rowCost(pts[i])
		return args
	}, o.Yield)
	if err != nil || !o.FlushSums {
		return end, wrapErr("storage: write history rows: %w", err)
	}
	all := &HistorySums{}
	all.merge(o.Sums.m)
	all.merge(batch)
	keys := make([]bucketKey, 0, len(all.m))
	for k := range all.m {
		keys = append(keys, k)
	}
	err = execChunks(ctx, rowCtx, st[3], st[4], len(keys), sumChunk, func(args []any, i int) []any {
		a := all.m[keys[i]]
		return append(args, keys[i].entity, keys[i].bucket, a.n, a.lo, a.hi, a.total)
	}, o.Yield)
	return end, wrapErr("storage: write history summaries: %w", err)
}

// merge adds sums to h.
func (h *HistorySums) merge(sums map[bucketKey]*bucketAgg) {
	if h.m == nil {
		h.m = make(map[bucketKey]*bucketAgg, len(sums))
	}
	for k, b := range sums {
		a := h.m[k]
		if a == nil {
			c := *b
			h.m[k] = &c
			continue
		}
		a.n += b.n
		a.lo, a.hi, a.total = min(a.lo, b.lo), max(a.hi, b.hi), a.total+b.total
	}
}

func wrapErr(format string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format, err)
}

// execChunks runs n rows through many (chunk rows a statement) and the
// rest through one; row appends row i's arguments.
func execChunks(ctx, rowCtx context.Context, one, many *sql.Stmt, n, chunk int, row func(args []any, i int) []any, yield func()) error {
	var args []any
	for i := 0; i < n; {
		if err := ctx.Err(); err != nil {
			return err
		}
		k, st := 1, one
		if n-i >= chunk {
			k, st = chunk, many
		}
		args = args[:0]
		for j := i; j < i+k; j++ {
			args = row(args, j)
		}
		if _, err := st.ExecContext(rowCtx, args...); err != nil {
			return err
		}
		i += k
		if yield != nil {
			yield()
		}
	}
	return nil
}

// appendHistoryRow appends a row's arguments and sums a number into its
// bucket.
func appendHistoryRow(args []any, p HistoryPoint, id int64, aggs map[bucketKey]*bucketAgg) []any {
	ms := p.T.UnixMilli()
	if !p.IsNum {
		return append(args, id, ms, nil, p.JSON)
	}
	k := bucketKey{id, ms - ms%HistoryBucketMS}
	if a := aggs[k]; a == nil {
		aggs[k] = &bucketAgg{n: 1, lo: p.Num, hi: p.Num, total: p.Num}
	} else {
		a.n++
		a.lo, a.hi, a.total = min(a.lo, p.Num), max(a.hi, p.Num), a.total+p.Num
	}
	return append(args, id, ms, p.Num, nil)
}

// trimHistory deletes the oldest raw rows beyond maxRows (at most
// trimChunk of them).
func trimHistory(ctx context.Context, tx *sql.Tx, maxRows int) (int, error) {
	if maxRows <= 0 {
		return 0, nil
	}
	var lo, hi sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT (SELECT rowid FROM history ORDER BY rowid LIMIT 1),
		(SELECT rowid FROM history ORDER BY rowid DESC LIMIT 1)`).Scan(&lo, &hi); err != nil {
		return 0, fmt.Errorf("storage: history bounds: %w", err)
	}
	if !lo.Valid || hi.Int64-lo.Int64+1 <= int64(maxRows) {
		return 0, nil
	}
	cut := min(hi.Int64-int64(maxRows)+1, lo.Int64+trimChunk)
	res, err := tx.ExecContext(ctx, `DELETE FROM history WHERE rowid < ?`, cut)
	if err != nil {
		return 0, fmt.Errorf("storage: trim history: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// PurgeHistory deletes history older than before: raw rows and summaries,
// entity by entity (each delete walks the entity's index range). It
// returns the rows deleted.
func (s *Store) PurgeHistory(ctx context.Context, before time.Time) (int, error) {
	ids, err := s.historyEntityIDs(ctx)
	if err != nil {
		return 0, s.fault(ctx, err)
	}
	ms := before.UnixMilli()
	total := 0
	for _, id := range ids {
		for _, q := range []string{`DELETE FROM history WHERE entity = ? AND t < ?`,
			`DELETE FROM history_5m WHERE entity = ? AND bucket < ?`} {
			res, err := s.w.ExecContext(ctx, q, id, ms)
			if err != nil {
				return total, s.wrote(ctx, fmt.Errorf("storage: purge history: %w", err))
			}
			n, _ := res.RowsAffected()
			total += int(n)
		}
	}
	return total, s.wrote(ctx, nil)
}

func (s *Store) historyEntityIDs(ctx context.Context) ([]int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM history_entities ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("storage: history entities: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("storage: history entities: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// HistoryRows reports how many raw rows the history holds, as the bound
// counts them (the rowid span: deletes by age inside it count too).
func (s *Store) HistoryRows(ctx context.Context) (int64, error) {
	var lo, hi sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT (SELECT rowid FROM history ORDER BY rowid LIMIT 1),
		(SELECT rowid FROM history ORDER BY rowid DESC LIMIT 1)`).Scan(&lo, &hi)
	if err != nil || !lo.Valid {
		return 0, s.fault(ctx, err)
	}
	return hi.Int64 - lo.Int64 + 1, nil
}
