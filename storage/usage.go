package storage

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// StoredUsage is what one principal keeps stored within the retention
// from its own requests: test runs and idempotency records (a principal's
// firings are trimmed per rule, and deploys need the deploy right).
type StoredUsage struct {
	TestRuns int
	// Bytes of the test-run envelopes and idempotency records.
	Bytes int64
	// OldestExpires is when the first of them expires (zero: none).
	OldestExpires time.Time
}

// StoredUsage sums what principal keeps stored (unexpired records only).
// It reads record sizes, never the records (octet_length does not load
// a value), through indexes of the principal's test runs and keys.
func (s *Store) StoredUsage(ctx context.Context, principal string) (StoredUsage, error) {
	v, err := s.storedUsage(ctx, principal)
	return v, s.fault(ctx, err)
}

const (
	usageRunsSQL = `SELECT COUNT(*), COALESCE(SUM(octet_length(envelope)), 0), MIN(expires) FROM runs
		WHERE principal = ? AND kind = 'test' AND (expires IS NULL OR expires > ?)`
	usageIdemSQL = `SELECT COALESCE(SUM(octet_length(envelope)), 0), MIN(expires) FROM idempotency
		WHERE principal = ? AND (expires IS NULL OR expires > ?)`
)

func (s *Store) storedUsage(ctx context.Context, principal string) (StoredUsage, error) {
	now := s.now().UnixNano()
	var u StoredUsage
	var runBytes, idemBytes int64
	var oldestRun, oldestIdem sql.NullInt64
	row, err := s.queryRow(ctx, usageRunsSQL, principal, now)
	if err == nil {
		err = row.Scan(&u.TestRuns, &runBytes, &oldestRun)
	}
	if err != nil {
		return StoredUsage{}, fmt.Errorf("storage: stored usage of %s: %w", principal, err)
	}
	row, err = s.queryRow(ctx, usageIdemSQL, principal, now)
	if err == nil {
		err = row.Scan(&idemBytes, &oldestIdem)
	}
	if err != nil {
		return StoredUsage{}, fmt.Errorf("storage: stored usage of %s: %w", principal, err)
	}
	u.Bytes = runBytes + idemBytes
	for _, t := range []sql.NullInt64{oldestRun, oldestIdem} {
		if e := timeVal(t); !e.IsZero() && (u.OldestExpires.IsZero() || e.Before(u.OldestExpires)) {
			u.OldestExpires = e
		}
	}
	return u, nil
}
