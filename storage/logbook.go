package storage

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// LogEntry is one line of the logbook: what happened, when, and what it
// concerns (a device and its area, a rule and its program, the principal
// it belongs to, a run).
type LogEntry struct {
	ID        int64 // set by the store
	T         time.Time
	Kind      string
	Device    string
	Area      string
	Rule      string
	Principal string
	Ref       string
	Run       string
	Status    string
	Text      string
}

// LogFilter selects logbook entries, newest first. Before (with BeforeID)
// pages on: entries strictly older than that (T, ID).
type LogFilter struct {
	Kind, Device, Area, Rule string
	Before                   time.Time
	BeforeID                 int64
	Limit                    int
}

// MaxLogLimit bounds one ListLog answer.
const MaxLogLimit = 500

// ListLog lists logbook entries, newest first.
func (s *Store) ListLog(ctx context.Context, f LogFilter) ([]LogEntry, error) {
	var where []string
	var args []any
	for _, c := range []struct{ col, v string }{{"kind", f.Kind}, {"device", f.Device}, {"area", f.Area}, {"rule", f.Rule}} {
		if c.v != "" {
			where = append(where, c.col+" = ?")
			args = append(args, c.v)
		}
	}
	if !f.Before.IsZero() {
		where = append(where, "(t < ? OR t = ? AND id < ?)")
		b := f.Before.UnixNano()
		args = append(args, b, b, f.BeforeID)
	}
	if f.Limit <= 0 || f.Limit > MaxLogLimit {
		f.Limit = MaxLogLimit
	}
	q := `SELECT id, t, kind, device, area, rule, principal, ref, run, status, text FROM logbook`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY t DESC, id DESC LIMIT ?"
	st, err := s.stmt(ctx, s.r, q)
	if err != nil {
		return nil, fmt.Errorf("storage: logbook: %w", s.fault(ctx, err))
	}
	rows, err := st.QueryContext(ctx, append(args, f.Limit)...)
	if err != nil {
		return nil, fmt.Errorf("storage: logbook: %w", s.fault(ctx, err))
	}
	defer rows.Close()
	var out []LogEntry
	for rows.Next() {
		var e LogEntry
		var t int64
		if err := rows.Scan(&e.ID, &t, &e.Kind, &e.Device, &e.Area, &e.Rule, &e.Principal, &e.Ref, &e.Run, &e.Status, &e.Text); err != nil {
			return nil, fmt.Errorf("storage: logbook: %w", err)
		}
		e.T = time.Unix(0, t).UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

// PurgeLog deletes logbook entries older than before and returns how many.
func (s *Store) PurgeLog(ctx context.Context, before time.Time) (int, error) {
	res, err := s.w.ExecContext(ctx, `DELETE FROM logbook WHERE t < ?`, before.UnixNano())
	if err != nil {
		return 0, s.wrote(ctx, fmt.Errorf("storage: purge logbook: %w", err))
	}
	n, _ := res.RowsAffected()
	return int(n), s.wrote(ctx, nil)
}
