package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// history_last holds, per entity, its latest recorded value and since
// when it has held it. The raw history loses rows to its bound and to
// age; this row stays, so since() and last_changed() after a restart do
// not depend on them. It is also what WriteHistory compares a batch's
// first point of an entity with (changesOnly): only changes are written.

// histLastSQL upserts an entity's latest value, which the batch changed
// at ?2; a batch older than the stored value (a clock stepped back)
// leaves it. Unqualified columns on the right are the stored row's.
// It also keeps the entity's counts (history_seq.go): n and vcounts
// (NULL ?5: no text in the batch, kept); vfrom, moved forward when ?7
// forces it, else set when NULL; cfrom, moved forward when ?9 does.
const histLastSQL = `INSERT INTO history_last (entity, t, num, val, since, n, vcounts, vfrom, cfrom)
	VALUES (?1, ?2, ?3, ?4, ?2, coalesce(?5, 0), ?10, ?6, ?8)
	ON CONFLICT (entity) DO UPDATE SET
		since = CASE WHEN excluded.t < t THEN since ELSE excluded.since END,
		num = CASE WHEN excluded.t < t THEN num ELSE excluded.num END,
		val = CASE WHEN excluded.t < t THEN val ELSE excluded.val END,
		t = max(t, excluded.t),
		n = coalesce(?5, n), vcounts = CASE WHEN ?5 IS NULL THEN vcounts ELSE ?10 END,
		vfrom = CASE WHEN ?7 THEN max(coalesce(vfrom, 0), excluded.vfrom) ELSE coalesce(vfrom, excluded.vfrom) END,
		cfrom = CASE WHEN ?9 THEN max(coalesce(cfrom, 0), excluded.cfrom) ELSE cfrom END`

// histLastReadSQL reads an entity's latest recorded value.
const histLastReadSQL = `SELECT num, val FROM history_last WHERE entity = ?`

// changesOnly returns the points of pts (in their order) whose value
// differs from their entity's value before them in time: the batch's
// point before, or for its first the stored latest (st:
// histLastReadSQL). It copies pts only when it drops one.
func changesOnly(ctx context.Context, st *sql.Stmt, pts []HistoryPoint, idOf func(string) int64) ([]HistoryPoint, error) {
	type prev struct {
		p  HistoryPoint
		ok bool // a value is known
	}
	before := map[string]prev{}
	var same []bool
	for _, i := range timeOrder(pts) {
		p := pts[i]
		b, read := before[p.Entity]
		if !read {
			var num sql.NullFloat64
			var val sql.NullString
			switch err := st.QueryRowContext(ctx, idOf(p.Entity)).Scan(&num, &val); {
			case err == nil:
				b = prev{HistoryPoint{IsNum: num.Valid, Num: num.Float64, JSON: val.String}, true}
			case !errors.Is(err, sql.ErrNoRows):
				return nil, fmt.Errorf("storage: write history: last value of %s: %w", p.Entity, err)
			}
		}
		if b.ok && samePoint(b.p, p) {
			if same == nil {
				same = make([]bool, len(pts))
			}
			same[i] = true
		}
		before[p.Entity] = prev{p, true}
	}
	if same == nil {
		return pts, nil
	}
	out := make([]HistoryPoint, 0, len(pts))
	for i, p := range pts {
		if !same[i] {
			out = append(out, p)
		}
	}
	return out, nil
}

// writeLastChanges upserts the latest value of every entity in pts (in
// time order per entity), one statement per entity: every point is a
// change (changesOnly), so its latest is since when it holds it.
func writeLastChanges(ctx context.Context, st *sql.Stmt, pts []HistoryPoint, idOf func(string) int64, seqs *histSeqs) error {
	last := map[string]HistoryPoint{}
	var order []string
	for _, i := range timeOrder(pts) {
		p := pts[i]
		if _, ok := last[p.Entity]; !ok {
			order = append(order, p.Entity)
		}
		last[p.Entity] = p
	}
	for _, e := range order {
		p, id := last[e], idOf(e)
		es := seqs.ents[id]
		var num, val any
		if p.IsNum {
			num = p.Num
		} else {
			val = p.JSON
		}
		var n, vc any
		if es.loaded {
			n, vc = es.n, encodeCounts(es.cum)
		}
		if _, err := st.ExecContext(ctx, id, p.T.UnixMilli(), num, val, n, es.vfrom, es.vforce, es.cfrom, es.cforce, vc); err != nil {
			return fmt.Errorf("storage: write last change of %s: %w", e, err)
		}
	}
	return nil
}

// samePoint compares two recorded values as rules compare states
// (rules.SameValue): numbers by value, a number's text too; anything
// else by its JSON, which the recorder writes in one form (a too-large
// value's marker is its size).
func samePoint(a, b HistoryPoint) bool {
	switch {
	case a.IsNum && b.IsNum:
		return a.Num == b.Num
	case a.IsNum:
		n, ok := numberText(b.JSON)
		return ok && n == a.Num
	case b.IsNum:
		n, ok := numberText(a.JSON)
		return ok && n == b.Num
	}
	return a.JSON == b.JSON
}

// numberText reads a JSON string holding a number's text.
func numberText(j string) (float64, bool) {
	if len(j) < 2 || j[0] != '"' {
		return 0, false
	}
	var s string
	if json.Unmarshal([]byte(j), &s) != nil || strings.TrimSpace(s) == "" {
		return 0, false
	}
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return n, err == nil
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
