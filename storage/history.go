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
// so max(rowid) - min(rowid) bounds the rows, and the oldest go first.
// Both tables are purged by age (PurgeHistory).

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
	// Yield is called between rows (runtime.Gosched for a background
	// writer, as WriteOptions.Yield).
	Yield func()
}

// trimChunk bounds the rows one WriteHistory deletes to honour MaxRows.
const trimChunk = 20000

const (
	histEntitySQL = `INSERT INTO history_entities (entity) VALUES (?)
		ON CONFLICT (entity) DO UPDATE SET entity = excluded.entity RETURNING id`
	histInsertSQL = `INSERT INTO history (entity, t, num, val) VALUES (?, ?, ?, ?)`
	// histChunk rows go in one statement: a statement's overhead (and its
	// allocations) is paid once per chunk rather than once per row.
	histChunk     = 64
	histBucketSQL = `INSERT INTO history_5m (entity, bucket, n, lo, hi, total) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (entity, bucket) DO UPDATE SET n = n + excluded.n, lo = min(lo, excluded.lo),
			hi = max(hi, excluded.hi), total = total + excluded.total`
)

type bucketKey struct {
	entity int64
	bucket int64
}

type bucketAgg struct {
	n             int64
	lo, hi, total float64
}

// WriteHistory stores a batch of changes in one transaction, with their
// 5-minute summaries, and trims the raw table to o.MaxRows. It returns
// how many old rows the bound deleted.
func (s *Store) WriteHistory(ctx context.Context, pts []HistoryPoint, o HistoryWrite) (int, error) {
	if len(pts) == 0 {
		return 0, nil
	}
	stmts := [4]*sql.Stmt{}
	for i, q := range []string{histEntitySQL, histInsertSQL, histBucketSQL, histInsertChunkSQL} {
		st, err := s.stmt(ctx, s.w, q)
		if err != nil {
			return 0, s.wrote(ctx, fmt.Errorf("storage: write history: prepare: %w", err))
		}
		stmts[i] = st
	}
	trimmed := 0
	rowCtx := context.WithoutCancel(ctx) // as InsertRuns: no watcher goroutine per row
	err := s.inTx(ctx, fmt.Sprintf("write %d history rows", len(pts)), func(tx *sql.Tx) error {
		ids, err := historyIDs(rowCtx, tx.StmtContext(rowCtx, stmts[0]), pts)
		if err != nil {
			return err
		}
		aggs, err := insertHistoryRows(ctx, rowCtx, [2]*sql.Stmt{tx.StmtContext(rowCtx, stmts[1]), tx.StmtContext(rowCtx, stmts[3])}, pts, ids, o.Yield)
		if err != nil {
			return err
		}
		up := tx.StmtContext(rowCtx, stmts[2])
		defer up.Close()
		for k, a := range aggs {
			if _, err := up.ExecContext(rowCtx, k.entity, k.bucket, a.n, a.lo, a.hi, a.total); err != nil {
				return fmt.Errorf("storage: write history summary: %w", err)
			}
		}
		trimmed, err = trimHistory(rowCtx, tx, o.MaxRows)
		return err
	})
	return trimmed, err
}

// historyIDs resolves (creating) the entity ids of a batch.
func historyIDs(ctx context.Context, st *sql.Stmt, pts []HistoryPoint) (map[string]int64, error) {
	defer st.Close()
	ids := map[string]int64{}
	for i := range pts {
		e := pts[i].Entity
		if _, ok := ids[e]; ok {
			continue
		}
		var id int64
		if err := st.QueryRowContext(ctx, e).Scan(&id); err != nil {
			return nil, fmt.Errorf("storage: write history: entity %s: %w", e, err)
		}
		ids[e] = id
	}
	return ids, nil
}

// histInsertChunkSQL inserts histChunk rows.
var histInsertChunkSQL = `INSERT INTO history (entity, t, num, val) VALUES (?, ?, ?, ?)` +
	strings.Repeat(", (?, ?, ?, ?)", histChunk-1)

// insertHistoryRows inserts the rows, histChunk per statement (st[1]) and
// the rest one by one (st[0]), and sums the numeric ones per bucket.
func insertHistoryRows(ctx, rowCtx context.Context, st [2]*sql.Stmt, pts []HistoryPoint, ids map[string]int64, yield func()) (map[bucketKey]*bucketAgg, error) {
	defer st[0].Close()
	defer st[1].Close()
	aggs := map[bucketKey]*bucketAgg{}
	args := make([]any, 0, 4*histChunk)
	for i := 0; i < len(pts); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		n := 1
		if len(pts)-i >= histChunk {
			n = histChunk
		}
		args = args[:0]
		for _, p := range pts[i : i+n] {
			args = appendHistoryRow(args, p, ids[p.Entity], aggs)
		}
		if _, err := st[min(n-1, 1)].ExecContext(rowCtx, args...); err != nil {
			return nil, fmt.Errorf("storage: write history rows: %w", err)
		}
		i += n
		if yield != nil {
			yield()
		}
	}
	return aggs, nil
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
