package storage

import (
	"context"
	"database/sql"
	"fmt"
)

// The history's bound by bytes: each row's cost is its value's bytes
// (8 for a number) and histRowBytes for the rest of it, and bpos is the
// running sum of the costs of the rows before it (rowid order), so the
// table's bytes are the last row's end minus the first row's bpos: two
// seeks on the rowid, whatever the rows between, as the row bound's span.
// Rows purged by age inside the span count too, as they do for rows.

// histRowBytes is what a row costs besides its value: its integers, its
// rowid and its entry in history_by_entity (migration 17 says 40 too).
const histRowBytes = 40

// histCostSQL is a row's cost, as rowCost counts it.
const histCostSQL = `(40 + coalesce(length(CAST(val AS BLOB)), 8))`

// rowCost is the cost of p's row.
func rowCost(p HistoryPoint) int64 {
	if p.IsNum {
		return histRowBytes + 8
	}
	return histRowBytes + int64(len(p.JSON))
}

// historyEnd is the end of the last row in the running sum (0: none).
func historyEnd(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int64, error) {
	var end sql.NullInt64
	err := q.QueryRowContext(ctx, `SELECT bpos + `+histCostSQL+` FROM history ORDER BY rowid DESC LIMIT 1`).Scan(&end)
	if err != nil && err != sql.ErrNoRows {
		return 0, fmt.Errorf("storage: history bytes: %w", err)
	}
	return end.Int64, nil
}

// trimHistoryBytes deletes the oldest raw rows until the rows left cost
// at most maxBytes (at most trimChunk of them); end is the last row's end.
func trimHistoryBytes(ctx context.Context, tx *sql.Tx, maxBytes, end int64) (int, error) {
	if maxBytes <= 0 {
		return 0, nil
	}
	var lo, from sql.NullInt64
	err := tx.QueryRowContext(ctx, `SELECT rowid, bpos FROM history ORDER BY rowid LIMIT 1`).Scan(&lo, &from)
	if err == sql.ErrNoRows || err == nil && end-from.Int64 <= maxBytes {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("storage: history bytes: %w", err)
	}
	// The first row kept starts at end - maxBytes or later.
	res, err := tx.ExecContext(ctx, `DELETE FROM history WHERE rowid < coalesce((SELECT rowid FROM history
		WHERE rowid >= ?1 AND rowid < ?1 + ?2 AND bpos >= ?3 ORDER BY rowid LIMIT 1), ?1 + ?2)`,
		lo.Int64, trimChunk, end-maxBytes)
	if err != nil {
		return 0, fmt.Errorf("storage: trim history by bytes: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// HistoryBytes reports the raw rows' bytes as the bound counts them.
func (s *Store) HistoryBytes(ctx context.Context) (int64, error) {
	var n sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT (SELECT bpos + `+histCostSQL+` FROM history ORDER BY rowid DESC LIMIT 1)
		- (SELECT bpos FROM history ORDER BY rowid LIMIT 1)`).Scan(&n)
	return n.Int64, s.fault(ctx, err)
}
