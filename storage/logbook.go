package storage

import (
	"context"
	"database/sql"
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

// fromBus reports whether entries of kind come from the bus (a device's
// event or availability): anyone who can publish can make them, so they
// are kept within their own share of the rows.
func fromBus(kind string) bool { return kind == "event" || kind == "availability" }

// LogTrimmed is what a WriteLog trimmed: the bus's entries and the others.
type LogTrimmed struct{ Bus, Own int }

// WriteLog appends entries in one transaction and keeps the newest maxRows:
// the bus's entries (fromBus) at most half of them, the others the rest,
// so that a flood on the bus cannot evict the rules', firings', approvals'
// and server's lines. Each share is trimmed by its own sequence (seq), the
// oldest first.
func (s *Store) WriteLog(ctx context.Context, entries []LogEntry, maxRows int) (LogTrimmed, error) {
	var trimmed LogTrimmed
	err := s.inTx(ctx, "logbook", func(tx *sql.Tx) error {
		var last [2]int64 // each share's last seq
		for share := range last {
			if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM logbook WHERE bus = ?`, share).Scan(&last[share]); err != nil {
				return fmt.Errorf("storage: logbook: %w", err)
			}
		}
		if err := insertLog(ctx, tx, entries, &last); err != nil {
			return err
		}
		if maxRows <= 0 {
			return nil
		}
		keep := [2]int64{int64(maxRows - maxRows/2), int64(maxRows / 2)}
		for share, n := range []*int{&trimmed.Own, &trimmed.Bus} {
			if last[share] <= keep[share] {
				continue
			}
			res, err := tx.ExecContext(ctx, `DELETE FROM logbook WHERE bus = ? AND seq <= ?`, share, last[share]-keep[share])
			if err != nil {
				return fmt.Errorf("storage: logbook: trim: %w", err)
			}
			d, _ := res.RowsAffected()
			*n = int(d)
		}
		return nil
	})
	return trimmed, err
}

// insertLog inserts entries, numbering each in its share from last on.
func insertLog(ctx context.Context, tx *sql.Tx, entries []LogEntry, last *[2]int64) error {
	st, err := tx.PrepareContext(ctx, `INSERT INTO logbook (t, kind, device, area, rule, principal, ref, run, status, text, bus, seq)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("storage: logbook: %w", err)
	}
	defer st.Close()
	for _, e := range entries {
		share := 0
		if fromBus(e.Kind) {
			share = 1
		}
		last[share]++
		if _, err := st.ExecContext(ctx, e.T.UnixNano(), e.Kind, e.Device, e.Area, e.Rule, e.Principal, e.Ref, e.Run, e.Status, e.Text,
			share, last[share]); err != nil {
			return fmt.Errorf("storage: logbook: %w", err)
		}
	}
	return nil
}

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
