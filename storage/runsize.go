package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// GetRunMeta is GetRunOf (principal "" = GetRun) without the envelope:
// a run's listing record, at the cost of a missing one.
func (s *Store) GetRunMeta(ctx context.Context, id, principal string) (Run, error) {
	if principal == "" {
		v, err := s.getRun(ctx, id, `SELECT `+runColsNoEnvelope+` FROM runs
		WHERE id = ? AND (expires IS NULL OR expires > ?)`, id, s.now().UnixNano())
		return v, s.fault(ctx, err)
	}
	v, err := s.getRun(ctx, id, `SELECT `+runColsNoEnvelope+` FROM runs
		WHERE id = ? AND principal = ? AND (expires IS NULL OR expires > ?)`, id, principal, s.now().UnixNano())
	return v, s.fault(ctx, err)
}

// RunSize returns the bytes of run id's stored record (its envelope),
// without reading it; principal "" = any principal's run, else only that
// principal's (another's is ErrNotFound, as in GetRunOf).
func (s *Store) RunSize(ctx context.Context, id, principal string) (int64, error) {
	q := `SELECT coalesce(octet_length(envelope), 0) FROM runs WHERE id = ? AND principal = ? AND (expires IS NULL OR expires > ?)`
	args := []any{id, principal, s.now().UnixNano()}
	if principal == "" {
		q = `SELECT coalesce(octet_length(envelope), 0) FROM runs WHERE id = ? AND (expires IS NULL OR expires > ?)`
		args = []any{id, s.now().UnixNano()}
	}
	row, err := s.queryRow(ctx, q, args...)
	if err != nil {
		return 0, s.fault(ctx, fmt.Errorf("storage: run size %s: %w", id, err))
	}
	var n int64
	err = row.Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("storage: run size %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return 0, s.fault(ctx, fmt.Errorf("storage: run size %s: %w", id, err))
	}
	return n, nil
}

// CountRequestRuns counts principal's unexpired deploy and manual run
// records of one status (the engine bounds its refused requests this way),
// up to limit (the count stops there).
func (s *Store) CountRequestRuns(ctx context.Context, principal, status string, limit int) (int, error) {
	row, err := s.queryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM runs
		WHERE status = ? AND status <> 'success' AND principal = ? AND kind IN (?, ?) AND (expires IS NULL OR expires > ?) LIMIT ?)`,
		status, principal, KindDeploy, KindManual, s.now().UnixNano(), limit)
	if err != nil {
		return 0, s.fault(ctx, fmt.Errorf("storage: count %s runs of %s: %w", status, principal, err))
	}
	var n int
	if err := row.Scan(&n); err != nil {
		return 0, s.fault(ctx, fmt.Errorf("storage: count %s runs of %s: %w", status, principal, err))
	}
	return n, nil
}
