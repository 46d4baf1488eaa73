package storage

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Approval statuses: a request is pending until a human approves or
// declines it; an approved one becomes used when the deploy it covers is
// installed. Pending and approved requests past ExpiresAt count for nothing.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDeclined = "declined"
	ApprovalUsed     = "used"
)

// Approval is one request for a human's approval of a risky deploy: what
// was shown (program, params, plan, risk), bound by Key to exactly that
// deploy, and who decided it, when and through which channel.
type Approval struct {
	ID        string
	Key       string // hash of program ref, bound params, rule name, principal
	Principal string // who asked
	Rule      string
	Ref       string
	Program   []byte // the program as written
	Params    []byte // the bound params (JSON object or empty)
	Plan      []byte // the plan with bound arguments (JSON)
	Risk      string
	Status    string
	CreatedAt time.Time
	ExpiresAt time.Time
	DecidedBy string
	DecidedAt time.Time
	Channel   string
	UsedRun   string
	UsedAt    time.Time
}

// Expired reports whether a pending or approved request can no longer be
// used at now.
func (a Approval) Expired(now time.Time) bool {
	return (a.Status == ApprovalPending || a.Status == ApprovalApproved) && !now.Before(a.ExpiresAt)
}

const approvalCols = `id, key, principal, rule, ref, program, params, plan, risk, status, created_at, expires_at,
	decided_by, decided_at, channel, used_run, used_at`

// CreateApproval stores a new pending request.
func (s *Store) CreateApproval(ctx context.Context, a Approval) error {
	if a.ID == "" || a.Key == "" || a.Principal == "" || a.ExpiresAt.IsZero() {
		return fmt.Errorf("%w: an approval needs an id, a key, a principal and an expiry", ErrInvalid)
	}
	return s.inTx(ctx, "create approval", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO approvals (`+approvalCols+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, NULL, NULL)`,
			a.ID, a.Key, a.Principal, a.Rule, a.Ref, string(a.Program), jsonArg(a.Params), jsonArg(a.Plan), a.Risk,
			ApprovalPending, a.CreatedAt.UnixNano(), a.ExpiresAt.UnixNano())
		if err != nil {
			return fmt.Errorf("storage: create approval: %w", err)
		}
		return nil
	})
}

// GetApproval returns the request id, or ErrNotFound.
func (s *Store) GetApproval(ctx context.Context, id string) (Approval, error) {
	list, err := s.queryApprovals(ctx, `WHERE id = ?`, id)
	if err == nil && len(list) == 0 {
		err = fmt.Errorf("storage: get approval %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Approval{}, s.fault(ctx, err)
	}
	return list[0], nil
}

// LatestApproval returns the newest request for key, or ErrNotFound.
func (s *Store) LatestApproval(ctx context.Context, key string) (Approval, error) {
	list, err := s.queryApprovals(ctx, `WHERE key = ? ORDER BY created_at DESC LIMIT 1`, key)
	if err == nil && len(list) == 0 {
		err = fmt.Errorf("storage: latest approval: %w", ErrNotFound)
	}
	if err != nil {
		return Approval{}, s.fault(ctx, err)
	}
	return list[0], nil
}

// LastUsedApproval returns the approval the rule's installed deploy used,
// or ErrNotFound.
func (s *Store) LastUsedApproval(ctx context.Context, rule string) (Approval, error) {
	list, err := s.queryApprovals(ctx, `WHERE rule = ? AND status = 'used' ORDER BY used_at DESC LIMIT 1`, rule)
	if err == nil && len(list) == 0 {
		err = fmt.Errorf("storage: last used approval: %w", ErrNotFound)
	}
	if err != nil {
		return Approval{}, s.fault(ctx, err)
	}
	return list[0], nil
}

// ListApprovals returns the newest requests first, at most limit; with
// openOnly, only those pending and unexpired at now.
func (s *Store) ListApprovals(ctx context.Context, openOnly bool, now time.Time, limit int) ([]Approval, error) {
	var list []Approval
	var err error
	if openOnly {
		list, err = s.queryApprovals(ctx, `WHERE status = 'pending' AND expires_at > ? ORDER BY created_at DESC LIMIT ?`, now.UnixNano(), limit)
	} else {
		list, err = s.queryApprovals(ctx, `ORDER BY created_at DESC LIMIT ?`, limit)
	}
	return list, s.fault(ctx, err)
}

// CountOpenApprovals counts principal's pending, unexpired requests.
func (s *Store) CountOpenApprovals(ctx context.Context, principal string, now time.Time) (int, error) {
	var n int
	row, err := s.queryRow(ctx, `SELECT COUNT(*) FROM approvals WHERE principal = ? AND status = 'pending' AND expires_at > ?`, principal, now.UnixNano())
	if err == nil {
		err = row.Scan(&n)
	}
	if err != nil {
		return 0, s.fault(ctx, fmt.Errorf("storage: count approvals: %w", err))
	}
	return n, nil
}

// DecideApproval approves or declines a pending, unexpired request. It
// returns ErrNotFound for an unknown id and ErrConflict when the request
// is no longer pending or has expired.
func (s *Store) DecideApproval(ctx context.Context, id string, approve bool, by, channel string, at time.Time) error {
	status := ApprovalDeclined
	if approve {
		status = ApprovalApproved
	}
	return s.transition(ctx, "decide approval "+id,
		`UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?, channel = ?
		WHERE id = ? AND status = 'pending' AND expires_at > ?`,
		id, status, by, at.UnixNano(), channel, id, at.UnixNano())
}

// UseApproval marks an approved, unexpired request used by run, once: a
// second use returns ErrConflict.
func (s *Store) UseApproval(ctx context.Context, id, run string, at time.Time) error {
	return s.transition(ctx, "use approval "+id,
		`UPDATE approvals SET status = 'used', used_run = ?, used_at = ?
		WHERE id = ? AND status = 'approved' AND expires_at > ?`,
		id, run, at.UnixNano(), id, at.UnixNano())
}

// transition runs an update of one request that holds only in some
// states: no row changed is ErrNotFound (no such id) or ErrConflict.
func (s *Store) transition(ctx context.Context, what, query, id string, args ...any) error {
	return s.inTx(ctx, what, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return fmt.Errorf("storage: %s: %w", what, err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM approvals WHERE id = ?`, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("storage: %s: %w", what, ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("storage: %s: %w", what, err)
		}
		return fmt.Errorf("storage: %s: %w", what, ErrConflict)
	})
}

func (s *Store) queryApprovals(ctx context.Context, where string, args ...any) ([]Approval, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+approvalCols+` FROM approvals `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("storage: read approvals: %w", err)
	}
	defer rows.Close()
	var out []Approval
	for rows.Next() {
		var a Approval
		var program string
		var params, plan []byte
		var created, expires int64
		var decidedBy, channel, usedRun sql.NullString
		var decidedAt, usedAt sql.NullInt64
		if err := rows.Scan(&a.ID, &a.Key, &a.Principal, &a.Rule, &a.Ref, &program, &params, &plan, &a.Risk, &a.Status,
			&created, &expires, &decidedBy, &decidedAt, &channel, &usedRun, &usedAt); err != nil {
			return nil, fmt.Errorf("storage: read approvals: %w", err)
		}
		a.Program, a.Params, a.Plan = []byte(program), jsonVal(params), jsonVal(plan)
		a.CreatedAt, a.ExpiresAt = time.Unix(0, created).UTC(), time.Unix(0, expires).UTC()
		a.DecidedBy, a.Channel, a.UsedRun = decidedBy.String, channel.String, usedRun.String
		a.DecidedAt, a.UsedAt = timeVal(decidedAt), timeVal(usedAt)
		out = append(out, a)
	}
	return out, rows.Err()
}

// NewApprovalID returns a fresh request id.
func NewApprovalID() string {
	return "ap_" + strings.TrimPrefix(NewRunID(), "run_")
}
