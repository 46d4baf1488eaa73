package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// history_last holds, per entity, its latest recorded value and since
// when it has held it (the first row of the latest run of equal values).
// The raw history loses rows to its bound and to age; this row stays, so
// since() and last_changed() after a restart do not depend on them.

// histLastSQL upserts an entity's latest value: since moves only when the
// value differs from the stored one, or when the batch itself changed it
// (?6 false); a batch older than the stored value (a clock stepped back)
// leaves it. Unqualified columns on the right are the stored row's.
// It also keeps the entity's counts (history_seq.go): n and vcounts
// (NULL ?7: no text in the batch, kept); vfrom, moved forward when ?9
// forces it, else set when NULL; cfrom, moved forward when ?11 does.
const histLastSQL = `INSERT INTO history_last (entity, t, num, val, since, n, vcounts, vfrom, cfrom)
	VALUES (?1, ?2, ?3, ?4, ?5, coalesce(?7, 0), ?12, ?8, ?10)
	ON CONFLICT (entity) DO UPDATE SET
		since = CASE WHEN excluded.t < t OR (?6 AND num IS excluded.num AND val IS excluded.val) THEN since ELSE excluded.since END,
		num = CASE WHEN excluded.t < t THEN num ELSE excluded.num END,
		val = CASE WHEN excluded.t < t THEN val ELSE excluded.val END,
		t = max(t, excluded.t),
		n = coalesce(?7, n), vcounts = CASE WHEN ?7 IS NULL THEN vcounts ELSE ?12 END,
		vfrom = CASE WHEN ?9 THEN max(coalesce(vfrom, 0), excluded.vfrom) ELSE coalesce(vfrom, excluded.vfrom) END,
		cfrom = CASE WHEN ?11 THEN max(coalesce(cfrom, 0), excluded.cfrom) ELSE cfrom END`

// lastRun is one entity's latest value in a batch: its last point, when
// the run of equal values ending there began, and whether that run is
// the whole batch.
type lastRun struct {
	last  HistoryPoint
	since time.Time
	whole bool
}

// writeLastChanges upserts the latest value of every entity in pts (in
// time order per entity), one statement per entity.
func writeLastChanges(ctx context.Context, st *sql.Stmt, pts []HistoryPoint, idOf func(string) int64, seqs *histSeqs) error {
	runs := map[string]*lastRun{}
	var order []string
	for _, i := range timeOrder(pts) {
		p := pts[i]
		r := runs[p.Entity]
		switch {
		case r == nil:
			runs[p.Entity] = &lastRun{last: p, since: p.T, whole: true}
			order = append(order, p.Entity)
			continue
		case !samePoint(r.last, p):
			r.since, r.whole = p.T, false
		}
		r.last = p
	}
	for _, e := range order {
		r, id := runs[e], idOf(e)
		es := seqs.ents[id]
		var num, val any
		if r.last.IsNum {
			num = r.last.Num
		} else {
			val = r.last.JSON
		}
		var n, vc any
		if es.loaded {
			n, vc = es.n, encodeCounts(es.cum)
		}
		if _, err := st.ExecContext(ctx, id, r.last.T.UnixMilli(), num, val, r.since.UnixMilli(), r.whole, n, es.vfrom, es.vforce, es.cfrom, es.cforce, vc); err != nil {
			return fmt.Errorf("storage: write last change of %s: %w", e, err)
		}
	}
	return nil
}

func samePoint(a, b HistoryPoint) bool {
	if a.IsNum || b.IsNum {
		return a.IsNum == b.IsNum && a.Num == b.Num
	}
	return a.JSON == b.JSON
}

// HistorySince returns entity's latest recorded value and since when it
// has held it, whatever the raw history still holds (ok false when none
// is recorded).
func (s *Store) HistorySince(ctx context.Context, entity string) (v HistoryValue, since time.Time, ok bool, err error) {
	row, err := s.queryRow(ctx, `SELECT t, num, val, since FROM history_last WHERE entity = `+histEntity, entity)
	if err != nil {
		return v, since, false, s.fault(ctx, fmt.Errorf("storage: last change of %s: %w", entity, err))
	}
	var t, at int64
	var num sql.NullFloat64
	var val sql.NullString
	switch err := row.Scan(&t, &num, &val, &at); {
	case errors.Is(err, sql.ErrNoRows):
		return v, since, false, nil
	case err != nil:
		return v, since, false, s.fault(ctx, fmt.Errorf("storage: last change of %s: %w", entity, err))
	}
	v = HistoryValue{T: time.UnixMilli(t).UTC(), IsNum: num.Valid, Num: num.Float64, JSON: val.String}
	if !num.Valid && !val.Valid {
		v.JSON = "null"
	}
	return v, time.UnixMilli(at).UTC(), true, nil
}
