package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// SetThrottleStart records that rule's body started at t, opening its
// throttle window. The engine calls it before the body runs, so the
// window survives a crash that loses the firing's record.
func (s *Store) SetThrottleStart(ctx context.Context, rule string, t time.Time) error {
	what := "throttle of " + rule
	conn, err := s.writer(ctx, what)
	if err != nil {
		return s.fault(ctx, err)
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, `INSERT INTO throttles (rule, body_at) VALUES (?, ?)
		ON CONFLICT (rule) DO UPDATE SET body_at = MAX(body_at, excluded.body_at)`, rule, t.UnixNano())
	if err != nil {
		err = fmt.Errorf("storage: %s: %w", what, err)
	}
	return s.wrote(ctx, err)
}

// ThrottleStart is when rule's body last started as SetThrottleStart
// recorded it (ok false when never).
func (s *Store) ThrottleStart(ctx context.Context, rule string) (time.Time, bool, error) {
	row, err := s.queryRow(ctx, `SELECT body_at FROM throttles WHERE rule = ?`, rule)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("storage: throttle of %s: %w", rule, s.fault(ctx, err))
	}
	var at int64
	switch err := row.Scan(&at); {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("storage: throttle of %s: %w", rule, s.fault(ctx, err))
	}
	return time.Unix(0, at).UTC(), true, nil
}
