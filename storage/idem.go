package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Idem is a recorded idempotency key (spec §6.5.6): the hash of the
// runnable and input it was first used with, and the envelope to replay.
type Idem struct {
	Key       string
	Principal string
	Hash      string
	Envelope  json.RawMessage
	Expires   time.Time // zero: never expires
}

// GetIdem returns the unexpired record for key, or ErrNotFound.
func (s *Store) GetIdem(ctx context.Context, key string) (Idem, error) {
	v, err := s.getIdem(ctx, key)
	return v, s.fault(ctx, err)
}

func (s *Store) getIdem(ctx context.Context, key string) (Idem, error) {
	var it Idem
	var env []byte
	var expires sql.NullInt64
	row, err := s.queryRow(ctx, `SELECT key, principal, hash, envelope, expires FROM idempotency
		WHERE key = ? AND (expires IS NULL OR expires > ?)`, key, s.now().UnixNano())
	if err == nil {
		err = row.Scan(&it.Key, &it.Principal, &it.Hash, &env, &expires)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return Idem{}, fmt.Errorf("storage: get idempotency key: %w", ErrNotFound)
	}
	if err != nil {
		return Idem{}, fmt.Errorf("storage: get idempotency key: %w", err)
	}
	it.Envelope, it.Expires = jsonVal(env), timeVal(expires)
	return it, nil
}

// PutIdem records it. If the key is already recorded (and unexpired) with
// the same hash, the first envelope is kept and PutIdem returns nil (a
// record claimed by ClaimIdem with no envelope yet gets it.Envelope); with
// a different hash it returns ErrConflict. An expired record is replaced.
func (s *Store) PutIdem(ctx context.Context, it Idem) error {
	_, _, err := s.putIdem(ctx, "put idempotency key", it)
	return err
}

// ClaimIdem records it (normally with no Envelope) before the run starts,
// so two concurrent requests with one key cannot both execute. claimed is
// true for the caller that recorded the key; any other caller gets the
// stored record (its Envelope is nil while the first run is in flight),
// or ErrConflict if the key was used with another hash. The claimant
// completes the record with PutIdem.
func (s *Store) ClaimIdem(ctx context.Context, it Idem) (stored Idem, claimed bool, err error) {
	return s.putIdem(ctx, "claim idempotency key", it)
}

func (s *Store) putIdem(ctx context.Context, what string, it Idem) (Idem, bool, error) {
	if it.Key == "" || it.Hash == "" {
		return Idem{}, false, fmt.Errorf("%w: idempotency record needs a key and a hash", ErrInvalid)
	}
	if err := checkJSON("idempotency envelope", it.Envelope); err != nil {
		return Idem{}, false, err
	}
	now := s.now().UnixNano()
	var stored Idem
	claimed := false
	err := s.inTx(ctx, what, func(tx *sql.Tx) error {
		var env []byte
		var expires sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT key, principal, hash, envelope, expires FROM idempotency
			WHERE key = ? AND (expires IS NULL OR expires > ?)`, it.Key, now).
			Scan(&stored.Key, &stored.Principal, &stored.Hash, &env, &expires)
		stored.Envelope, stored.Expires = jsonVal(env), timeVal(expires)
		switch {
		case err == nil && stored.Hash != it.Hash:
			return fmt.Errorf("storage: %s: %w: key already used with a different runnable or input", what, ErrConflict)
		case err == nil && (stored.Envelope != nil || it.Envelope == nil):
			return nil
		case err == nil: // completing a claim
			_, err = tx.ExecContext(ctx, `UPDATE idempotency SET envelope = ?, expires = ? WHERE key = ?`,
				jsonArg(it.Envelope), timeArg(it.Expires), it.Key)
			stored.Envelope, stored.Expires = it.Envelope, it.Expires
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.ExecContext(ctx, `INSERT INTO idempotency (key, principal, hash, envelope, expires)
				VALUES (?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET principal = excluded.principal,
				hash = excluded.hash, envelope = excluded.envelope, expires = excluded.expires`,
				it.Key, it.Principal, it.Hash, jsonArg(it.Envelope), timeArg(it.Expires))
			stored, claimed = it, true
		}
		if err != nil {
			return fmt.Errorf("storage: %s: %w", what, err)
		}
		return nil
	})
	if err != nil {
		return Idem{}, false, err
	}
	return stored, claimed, nil
}

// Pending is a timer that must survive a restart: a delay, a wait, or the
// window of a "for" trigger.
type Pending struct {
	ID       string
	Rule     string // "" for a timer that belongs to no installed rule
	Kind     string // "for", "delay", "wait"
	Deadline time.Time
	State    json.RawMessage
}

// PutPending stores p, replacing a stored timer with the same ID. A timer
// of an installed rule is deleted with the rule.
func (s *Store) PutPending(ctx context.Context, p Pending) error {
	if p.ID == "" || p.Deadline.IsZero() {
		return fmt.Errorf("%w: pending timer needs an id and a deadline", ErrInvalid)
	}
	if err := checkJSON("pending "+p.ID+" state", p.State); err != nil {
		return err
	}
	var rule any
	if p.Rule != "" {
		rule = p.Rule
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO pending (id, rule, kind, deadline, state) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET rule = excluded.rule, kind = excluded.kind,
		deadline = excluded.deadline, state = excluded.state`,
		p.ID, rule, p.Kind, p.Deadline.UnixNano(), jsonArg(p.State))
	if err != nil {
		err = fmt.Errorf("storage: put pending %s: %w", p.ID, err)
	}
	return s.wrote(ctx, err)
}

// DeletePending removes the timer with id; removing an absent timer is not
// an error (a timer may fire and be removed concurrently with its rule).
func (s *Store) DeletePending(ctx context.Context, id string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM pending WHERE id = ?`, id); err != nil {
		return s.wrote(ctx, fmt.Errorf("storage: delete pending %s: %w", id, err))
	}
	return s.wrote(ctx, nil)
}

// ListPending returns the timers of rule ("" for all timers), earliest
// deadline first.
func (s *Store) ListPending(ctx context.Context, rule string) ([]Pending, error) {
	v, err := s.listPending(ctx, rule)
	return v, s.fault(ctx, err)
}

func (s *Store) listPending(ctx context.Context, rule string) ([]Pending, error) {
	q := `SELECT id, COALESCE(rule, ''), kind, deadline, state FROM pending`
	var args []any
	if rule != "" {
		q, args = q+` WHERE rule = ?`, append(args, rule)
	}
	rows, err := s.r.QueryContext(ctx, q+` ORDER BY deadline, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("storage: list pending: %w", err)
	}
	defer rows.Close()
	var out []Pending
	for rows.Next() {
		var p Pending
		var deadline int64
		var state []byte
		if err := rows.Scan(&p.ID, &p.Rule, &p.Kind, &deadline, &state); err != nil {
			return nil, fmt.Errorf("storage: list pending: %w", err)
		}
		p.Deadline, p.State = time.Unix(0, deadline).UTC(), jsonVal(state)
		out = append(out, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: list pending: %w", err)
	}
	return out, nil
}

// GetMeta returns the setting key, or ErrNotFound.
func (s *Store) GetMeta(ctx context.Context, key string) (string, error) {
	v, err := s.getMeta(ctx, key)
	return v, s.fault(ctx, err)
}

func (s *Store) getMeta(ctx context.Context, key string) (string, error) {
	var v string
	err := s.r.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("storage: get meta %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("storage: get meta %s: %w", key, err)
	}
	return v, nil
}

// SetMeta stores the setting key.
func (s *Store) SetMeta(ctx context.Context, key, val string) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, val)
	if err != nil {
		err = fmt.Errorf("storage: set meta %s: %w", key, err)
	}
	return s.wrote(ctx, err)
}

// DeleteIdem forgets a key (a claim whose run was refused: refused runs are
// never recorded for replay). Deleting an absent key is fine.
func (s *Store) DeleteIdem(ctx context.Context, key string) error {
	return s.inTx(ctx, "delete idempotency key", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency WHERE key = ?`, key); err != nil {
			return fmt.Errorf("storage: delete idempotency key: %w", err)
		}
		return nil
	})
}
