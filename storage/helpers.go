package storage

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Helper is one stored household helper: its definition and value as
// the helpers package encodes them (JSON), and where it was made
// ("config": the configuration file; "api": MCP or the web UI).
type Helper struct {
	ID      string
	Def     string
	Source  string
	Value   string
	Updated time.Time
}

// LoadHelpers returns every stored helper, by id.
func (s *Store) LoadHelpers(ctx context.Context) ([]Helper, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, def, source, value, updated_at FROM helpers ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("storage: load helpers: %w", err)
	}
	defer rows.Close()
	var out []Helper
	for rows.Next() {
		var h Helper
		var at int64
		if err := rows.Scan(&h.ID, &h.Def, &h.Source, &h.Value, &at); err != nil {
			return nil, fmt.Errorf("storage: load helpers: %w", err)
		}
		h.Updated = time.Unix(0, at).UTC()
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: load helpers: %w", err)
	}
	return out, nil
}

// PutHelper stores a helper, replacing one of the same id.
func (s *Store) PutHelper(ctx context.Context, h Helper) error {
	if h.ID == "" || h.Def == "" || h.Value == "" {
		return fmt.Errorf("%w: a helper needs an id, a definition and a value", ErrInvalid)
	}
	return s.inTx(ctx, "put helper", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO helpers (id, def, source, value, updated_at) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (id) DO UPDATE SET def = excluded.def, source = excluded.source, value = excluded.value, updated_at = excluded.updated_at`,
			h.ID, h.Def, h.Source, h.Value, s.now().UnixNano())
		if err != nil {
			return fmt.Errorf("storage: put helper %s: %w", h.ID, err)
		}
		return nil
	})
}

// SetHelperValue stores a helper's value; a helper not stored is an
// ErrNotFound.
func (s *Store) SetHelperValue(ctx context.Context, id, value string) error {
	return s.inTx(ctx, "set helper value", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE helpers SET value = ?, updated_at = ? WHERE id = ?`, value, s.now().UnixNano(), id)
		if err != nil {
			return fmt.Errorf("storage: set helper %s: %w", id, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: helper %s", ErrNotFound, id)
		}
		return nil
	})
}

// DeleteHelper removes a helper (none stored: nothing happens).
func (s *Store) DeleteHelper(ctx context.Context, id string) error {
	return s.inTx(ctx, "delete helper", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM helpers WHERE id = ?`, id); err != nil {
			return fmt.Errorf("storage: delete helper %s: %w", id, err)
		}
		return nil
	})
}
