package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// LastFiringStart is when the latest firing of rule whose status is not
// one of except started (ok false when there is none still kept). The
// engine reads it to resume a rule's throttle window after a restart.
func (s *Store) LastFiringStart(ctx context.Context, rule string, except ...string) (time.Time, bool, error) {
	q := `SELECT started FROM runs WHERE rule = ? AND kind = 'firing'`
	args := []any{rule}
	if len(except) > 0 {
		q += ` AND status NOT IN (?` + strings.Repeat(`, ?`, len(except)-1) + `)`
		for _, st := range except {
			args = append(args, st)
		}
	}
	q += ` ORDER BY started DESC, id DESC LIMIT 1`
	row, err := s.queryRow(ctx, q, args...)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("storage: last firing of %s: %w", rule, s.fault(ctx, err))
	}
	var started int64
	switch err := row.Scan(&started); {
	case errors.Is(err, sql.ErrNoRows):
		return time.Time{}, false, nil
	case err != nil:
		return time.Time{}, false, fmt.Errorf("storage: last firing of %s: %w", rule, s.fault(ctx, err))
	}
	return time.Unix(0, started).UTC(), true, nil
}
