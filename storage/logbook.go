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

// The logbook's shares of its rows, each trimmed on its own: what the
// bus reports (anyone who can publish can make it), the rules' activity
// (firings and rule changes: any principal's rules fire as often as their
// triggers come, and a guest may switch its own rule as often as it
// likes), and the house's own lines (approvals, the server's and helpers'
// notes), which neither the bus nor a guest's busy rules can evict.
const (
	shareOwn = iota
	shareBus
	shareFirings
	nShares
)

// shareOf is the share an entry of kind belongs to.
func shareOf(kind string) int {
	switch kind {
	case "event", "availability":
		return shareBus
	case "firing", "rule":
		return shareFirings
	}
	return shareOwn
}

// LogFromBus reports whether an entry of kind is one the bus reports.
func LogFromBus(kind string) bool { return shareOf(kind) == shareBus }

// shareRows is each share's part of maxRows: half for the bus, a quarter
// for the firings, the rest for the house's own lines.
func shareRows(maxRows int) [nShares]int64 {
	bus, firings := maxRows/2, maxRows/4
	return [nShares]int64{shareOwn: int64(maxRows - bus - firings), shareBus: int64(bus), shareFirings: int64(firings)}
}

// LogTrimmed is what a WriteLog trimmed, by share.
type LogTrimmed struct{ Bus, Firings, Own int }

// WriteLog appends entries in one transaction and keeps the newest maxRows,
// each share (shareOf) within its part (shareRows), so that a flood on the
// bus or a guest's busy rules cannot evict the house's own lines. Each
// share is trimmed by its own sequence (seq), the oldest first.
func (s *Store) WriteLog(ctx context.Context, entries []LogEntry, maxRows int) (LogTrimmed, error) {
	var trimmed LogTrimmed
	err := s.inTx(ctx, "logbook", func(tx *sql.Tx) error {
		var last [nShares]int64 // each share's last seq
		for share := range last {
			if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(seq), 0) FROM logbook WHERE share = ?`, share).Scan(&last[share]); err != nil {
				return fmt.Errorf("storage: logbook: %w", err)
			}
		}
		if err := insertLog(ctx, tx, entries, &last); err != nil {
			return err
		}
		if maxRows <= 0 {
			return nil
		}
		keep := shareRows(maxRows)
		counts := [nShares]*int{shareOwn: &trimmed.Own, shareBus: &trimmed.Bus, shareFirings: &trimmed.Firings}
		for share, n := range counts {
			if last[share] <= keep[share] {
				continue
			}
			res, err := tx.ExecContext(ctx, `DELETE FROM logbook WHERE share = ? AND seq <= ?`, share, last[share]-keep[share])
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
func insertLog(ctx context.Context, tx *sql.Tx, entries []LogEntry, last *[nShares]int64) error {
	st, err := tx.PrepareContext(ctx, `INSERT INTO logbook (t, kind, device, area, rule, principal, ref, run, status, text, share, seq)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("storage: logbook: %w", err)
	}
	defer st.Close()
	for _, e := range entries {
		share := shareOf(e.Kind)
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
