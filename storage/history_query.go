package storage

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// HistoryValue is one stored change of a state entry.
type HistoryValue struct {
	T     time.Time
	IsNum bool
	Num   float64
	JSON  string
}

// HistoryBucket summarises the changes of one time bucket: for numbers
// their count, low, high and mean; for band reads (HistoryLastBuckets) the
// count and the bucket's last value.
type HistoryBucket struct {
	T            time.Time // the bucket's start
	N            int
	Lo, Hi, Mean float64
	Last         HistoryValue
}

const histEntity = `(SELECT id FROM history_entities WHERE entity = ?)`

// HistoryChanges returns entity's changes in [from, to), oldest first, at
// most limit of them (the oldest).
func (s *Store) HistoryChanges(ctx context.Context, entity string, from, to time.Time, limit int) ([]HistoryValue, error) {
	var out []HistoryValue
	err := s.histQuery(ctx, `SELECT t, num, val FROM history WHERE entity = `+histEntity+`
		AND t >= ? AND t < ? ORDER BY t, rowid LIMIT ?`, func(rows *sql.Rows) error {
		v, err := scanHistValue(rows, nil)
		out = append(out, v)
		return err
	}, entity, from.UnixMilli(), to.UnixMilli(), limit)
	return out, err
}

// HistoryBefore returns the last change of entity before t: the value in
// force at t.
func (s *Store) HistoryBefore(ctx context.Context, entity string, t time.Time) (HistoryValue, bool, error) {
	var v HistoryValue
	found := false
	err := s.histQuery(ctx, `SELECT t, num, val FROM history WHERE entity = `+histEntity+`
		AND t < ? ORDER BY t DESC, rowid DESC LIMIT 1`, func(rows *sql.Rows) error {
		var err error
		v, err = scanHistValue(rows, nil)
		found = true
		return err
	}, entity, t.UnixMilli())
	return v, found, err
}

// HistoryNumBuckets summarises entity's numeric changes in [from, to) in
// buckets of width aligned to the Unix epoch, oldest first; empty buckets
// are left out. A width that is a multiple of HistoryBucketMS reads the
// stored 5-minute summaries (which outlive the raw rows' bound), any
// other the raw rows.
func (s *Store) HistoryNumBuckets(ctx context.Context, entity string, from, to time.Time, width time.Duration) ([]HistoryBucket, error) {
	w := width.Milliseconds()
	if w <= 0 {
		return nil, fmt.Errorf("%w: history bucket width %v", ErrInvalid, width)
	}
	q := `SELECT t / ?1 AS b, count(num), min(num), max(num), sum(num) FROM history
		WHERE entity = (SELECT id FROM history_entities WHERE entity = ?2) AND t >= ?3 AND t < ?4 AND num IS NOT NULL
		GROUP BY b ORDER BY b`
	lo := from.UnixMilli()
	if w%HistoryBucketMS == 0 {
		q = `SELECT bucket / ?1 AS b, sum(n), min(lo), max(hi), sum(total) FROM history_5m
			WHERE entity = (SELECT id FROM history_entities WHERE entity = ?2) AND bucket >= ?3 AND bucket < ?4
			GROUP BY b ORDER BY b`
		lo -= lo % HistoryBucketMS // the summary holding from
	}
	var out []HistoryBucket
	err := s.histQuery(ctx, q, func(rows *sql.Rows) error {
		var b HistoryBucket
		var k int64
		var total float64
		if err := rows.Scan(&k, &b.N, &b.Lo, &b.Hi, &total); err != nil {
			return err
		}
		b.T = time.UnixMilli(k * w).UTC()
		if b.N > 0 {
			b.Mean = total / float64(b.N)
		}
		out = append(out, b)
		return nil
	}, w, entity, lo, to.UnixMilli())
	return out, err
}

// histQuery runs a cached read statement and calls row for every row.
func (s *Store) histQuery(ctx context.Context, q string, row func(*sql.Rows) error, args ...any) error {
	st, err := s.stmt(ctx, s.r, q)
	if err != nil {
		return s.fault(ctx, fmt.Errorf("storage: read history: %w", err))
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return s.fault(ctx, fmt.Errorf("storage: read history: %w", err))
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows); err != nil {
			return s.fault(ctx, fmt.Errorf("storage: read history: %w", err))
		}
	}
	return s.fault(ctx, rows.Err())
}

// scanHistValue scans (t, num, val), or the destinations dest returns
// around them.
func scanHistValue(rows *sql.Rows, dest func(t *int64, num *sql.NullFloat64, val *sql.NullString) []any) (HistoryValue, error) {
	var t int64
	var num sql.NullFloat64
	var val sql.NullString
	d := []any{&t, &num, &val}
	if dest != nil {
		d = dest(&t, &num, &val)
	}
	if err := rows.Scan(d...); err != nil {
		return HistoryValue{}, err
	}
	v := HistoryValue{T: time.UnixMilli(t).UTC(), IsNum: num.Valid, Num: num.Float64, JSON: val.String}
	if !num.Valid && !val.Valid {
		v.JSON = "null"
	}
	return v, nil
}
