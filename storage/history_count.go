package storage

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The counted reads (see history_seq.go): a range's count, its bands and
// its counts per value by index seeks. Ranges over rows without counts
// fall back to walking them; the walk for counts per value is bounded.

// maxCountWalk bounds the rows a walk for counts per value reads: the
// latest of the range.
const maxCountWalk = 10000

// histID is entity's id (ok false when it has no history).
func (s *Store) histID(ctx context.Context, entity string) (int64, bool, error) {
	row, err := s.queryRow(ctx, `SELECT id FROM history_entities WHERE entity = ?`, entity)
	if err != nil {
		return 0, false, s.fault(ctx, fmt.Errorf("storage: read history: %w", err))
	}
	var id int64
	switch err := row.Scan(&id); {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, s.fault(ctx, fmt.Errorf("storage: read history: %w", err))
	}
	return id, true, nil
}

// histFrom is the times from which entity id's counts (cfrom) and
// counts per value (vfrom) are exact; a NULL vfrom: never.
func (s *Store) histFrom(ctx context.Context, id int64) (cfrom, vfrom sql.NullInt64, err error) {
	err = s.histQuery(ctx, `SELECT cfrom, vfrom FROM history_last WHERE entity = ?`,
		func(rows *sql.Rows) error { return rows.Scan(&cfrom, &vfrom) }, id)
	return cfrom, vfrom, err
}

// counted reports whether a range starting at from may be counted by
// seeks: it starts at or after at (NULL: any start).
func counted(at sql.NullInt64, from time.Time) bool {
	return !at.Valid || from.UnixMilli() >= at.Int64
}

// span is last + 1 for two running counts read at a range's
// ends (0 when either end has no row); ok false when a row has no count.
func span(last, first sql.NullInt64, lastRow, firstRow bool) (int, bool) {
	if !lastRow || !firstRow {
		return 0, true
	}
	if !last.Valid || !first.Valid {
		return 0, false
	}
	return int(max(last.Int64-first.Int64+1, 0)), true
}

// HistoryCount counts entity's changes in [from, to).
func (s *Store) HistoryCount(ctx context.Context, entity string, from, to time.Time) (int, error) {
	id, ok, err := s.histID(ctx, entity)
	if err != nil || !ok {
		return 0, err
	}
	cfrom, _, err := s.histFrom(ctx, id)
	if err != nil {
		return 0, err
	}
	if !counted(cfrom, from) {
		return s.historyCountWalk(ctx, id, from, to)
	}
	var last, first sql.NullInt64
	var lastRow, firstRow bool
	err = s.histQuery(ctx, `SELECT l.seq, l.rowid IS NOT NULL, f.seq, f.rowid IS NOT NULL FROM (SELECT 1)
		LEFT JOIN history l ON l.rowid = (SELECT rowid FROM history WHERE entity = ?1 AND t < ?3 ORDER BY t DESC, rowid DESC LIMIT 1)
		LEFT JOIN history f ON f.rowid = (SELECT rowid FROM history WHERE entity = ?1 AND t >= ?2 ORDER BY t, rowid LIMIT 1)`,
		func(rows *sql.Rows) error { return rows.Scan(&last, &lastRow, &first, &firstRow) }, id, from.UnixMilli(), to.UnixMilli())
	if err != nil {
		return 0, err
	}
	if n, ok := span(last, first, lastRow, firstRow); ok {
		return n, nil
	}
	return s.historyCountWalk(ctx, id, from, to)
}

// historyCountWalk is HistoryCount over rows without counts.
func (s *Store) historyCountWalk(ctx context.Context, id int64, from, to time.Time) (int, error) {
	n := 0
	err := s.histQuery(ctx, `SELECT count(*) FROM history WHERE entity = ? AND t >= ? AND t < ?`,
		func(rows *sql.Rows) error { return rows.Scan(&n) }, id, from.UnixMilli(), to.UnixMilli())
	return n, err
}

// HistoryLastBuckets summarises entity's changes in [from, to) in buckets
// of width aligned to the Unix epoch: each bucket's count and its last
// change (what a band shows when there are too many changes to draw).
// Empty buckets are left out. Each bucket is two index seeks.
func (s *Store) HistoryLastBuckets(ctx context.Context, entity string, from, to time.Time, width time.Duration) ([]HistoryBucket, error) {
	w := width.Milliseconds()
	if w <= 0 {
		return nil, fmt.Errorf("%w: history bucket width %v", ErrInvalid, width)
	}
	id, ok, err := s.histID(ctx, entity)
	if err != nil || !ok || !from.Before(to) {
		return nil, err
	}
	lo, hi := from.UnixMilli(), to.UnixMilli()
	if cfrom, _, err := s.histFrom(ctx, id); err != nil || !counted(cfrom, from) {
		if err != nil {
			return nil, err
		}
		return s.historyLastBucketsWalk(ctx, id, lo, hi, w)
	}
	var out []HistoryBucket
	exact := true
	err = s.histQuery(ctx, `WITH RECURSIVE k(b) AS (SELECT ?1 UNION ALL SELECT b + 1 FROM k WHERE b < ?2)
		SELECT k.b, l.t, l.num, l.val, l.seq, f.seq FROM k
		JOIN history l ON l.rowid = (SELECT rowid FROM history WHERE entity = ?3 AND t < min((k.b + 1) * ?4, ?6) ORDER BY t DESC, rowid DESC LIMIT 1)
		JOIN history f ON f.rowid = (SELECT rowid FROM history WHERE entity = ?3 AND t >= max(k.b * ?4, ?5) ORDER BY t, rowid LIMIT 1)
		WHERE l.t >= max(k.b * ?4, ?5) ORDER BY k.b`, func(rows *sql.Rows) error {
		var b HistoryBucket
		var k int64
		var last, first sql.NullInt64
		v, err := scanHistValue(rows, func(t *int64, num *sql.NullFloat64, val *sql.NullString) []any {
			return []any{&k, t, num, val, &last, &first}
		})
		n, ok := span(last, first, true, true)
		exact = exact && ok
		b.T, b.N, b.Last = time.UnixMilli(k*w).UTC(), n, v
		out = append(out, b)
		return err
	}, lo/w, (hi-1)/w, id, w, lo, hi)
	if err != nil || exact {
		return out, err
	}
	return s.historyLastBucketsWalk(ctx, id, lo, hi, w)
}

// historyLastBucketsWalk is HistoryLastBuckets over rows without counts.
func (s *Store) historyLastBucketsWalk(ctx context.Context, id, lo, hi, w int64) ([]HistoryBucket, error) {
	var out []HistoryBucket
	// A bare column beside max() takes the row of the maximum (SQLite).
	err := s.histQuery(ctx, `SELECT t / ?1 AS b, count(*), max(t), num, val FROM history
		WHERE entity = ?2 AND t >= ?3 AND t < ?4 GROUP BY b ORDER BY b`, func(rows *sql.Rows) error {
		var b HistoryBucket
		var k int64
		v, err := scanHistValue(rows, func(t *int64, num *sql.NullFloat64, val *sql.NullString) []any {
			return []any{&k, &b.N, t, num, val}
		})
		b.T, b.Last = time.UnixMilli(k*w).UTC(), v
		out = append(out, b)
		return err
	}, w, id, lo, hi)
	return out, err
}

// HistoryValueCounts counts entity's changes in [from, to) per value (as
// JSON text), the most frequent first, at most limit values. Walked
// counts cover only the range's latest maxCountWalk changes: walked is
// how many changes they cover then (0 when the counts are exact).
func (s *Store) HistoryValueCounts(ctx context.Context, entity string, from, to time.Time, limit int) (counts map[string]int, walked int, err error) {
	id, ok, err := s.histID(ctx, entity)
	if err != nil || !ok {
		return map[string]int{}, 0, err
	}
	_, vfrom, err := s.histFrom(ctx, id)
	if err != nil {
		return nil, 0, err
	}
	if !vfrom.Valid || !counted(vfrom, from) {
		return s.historyValueCountsWalk(ctx, id, from, to, limit)
	}
	var fVal sql.NullString
	var fVC, lVC []byte
	var fRow, lRow bool
	err = s.histQuery(ctx, `SELECT f.val, f.vcounts, f.rowid IS NOT NULL, l.vcounts, l.rowid IS NOT NULL FROM (SELECT 1)
		LEFT JOIN history l ON l.rowid = (SELECT rowid FROM history WHERE entity = ?1 AND t < ?3 ORDER BY t DESC, rowid DESC LIMIT 1)
		LEFT JOIN history f ON f.rowid = (SELECT rowid FROM history WHERE entity = ?1 AND t >= ?2 ORDER BY t, rowid LIMIT 1)`,
		func(rows *sql.Rows) error { return rows.Scan(&fVal, &fVC, &fRow, &lVC, &lRow) }, id, from.UnixMilli(), to.UnixMilli())
	switch {
	case err != nil:
		return nil, 0, err
	case !fRow || !lRow:
		return map[string]int{}, 0, nil
	case fVC == nil || lVC == nil:
		return s.historyValueCountsWalk(ctx, id, from, to, limit)
	}
	slots := map[string]int{}
	err = s.histQuery(ctx, `SELECT val, slot FROM history_values WHERE entity = ?`, func(rows *sql.Rows) error {
		var v string
		var slot int
		err := rows.Scan(&v, &slot)
		slots[v] = slot
		return err
	}, id)
	return valueCounts(slots, decodeCounts(lVC), decodeCounts(fVC), fVal.String, limit), 0, err
}

// valueCounts is the counts per value between two rows' running counts,
// first's own value included: the limit most frequent.
func valueCounts(slots map[string]int, last, first []uint64, firstVal string, limit int) map[string]int {
	type vc struct {
		v string
		n int
	}
	at := func(c []uint64, i int) int64 {
		if i < len(c) {
			return int64(c[i])
		}
		return 0
	}
	var all []vc
	for v, slot := range slots {
		n := at(last, slot) - at(first, slot)
		if v == firstVal {
			n++
		}
		if n > 0 {
			all = append(all, vc{v, int(n)})
		}
	}
	slices.SortFunc(all, func(a, b vc) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(a.v, b.v)) })
	counts := map[string]int{}
	for _, c := range all[:min(len(all), limit)] {
		counts[c.v] = c.n
	}
	return counts
}

// historyValueCountsWalk counts per value the range's latest
// maxCountWalk changes.
func (s *Store) historyValueCountsWalk(ctx context.Context, id int64, from, to time.Time, limit int) (map[string]int, int, error) {
	out, total := map[string]int{}, 0
	err := s.histQuery(ctx, `SELECT v, count(*) AS n, sum(count(*)) OVER () FROM (
			SELECT coalesce(val, CAST(num AS TEXT), 'null') AS v FROM history
			WHERE entity = ? AND t >= ? AND t < ? ORDER BY t DESC, rowid DESC LIMIT ?)
		GROUP BY v ORDER BY n DESC, v LIMIT ?`,
		func(rows *sql.Rows) error {
			var v string
			var n int
			err := rows.Scan(&v, &n, &total)
			out[v] = n
			return err
		}, id, from.UnixMilli(), to.UnixMilli(), maxCountWalk, limit)
	if total < maxCountWalk {
		total = 0 // every change of the range was counted
	}
	return out, total, err
}
