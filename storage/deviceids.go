package storage

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// DeviceID pins a catalog id to the stable key of the device (or
// discovery entity) that came first (devices.IDAssignment; see there for
// the keys). A key holds one id (Left zero) and may keep others reserved.
type DeviceID struct {
	Key  string
	ID   string
	Base string    // the id the device's name asks for
	Left time.Time // when the key left the id (zero while it holds it)
}

// LoadDeviceIDs returns every device id assignment, by key and id.
func (s *Store) LoadDeviceIDs(ctx context.Context) ([]DeviceID, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT key, id, base, left_at FROM device_ids ORDER BY key, id`)
	if err != nil {
		return nil, fmt.Errorf("storage: load device ids: %w", err)
	}
	defer rows.Close()
	var out []DeviceID
	for rows.Next() {
		var d DeviceID
		var left int64
		if err := rows.Scan(&d.Key, &d.ID, &d.Base, &left); err != nil {
			return nil, fmt.Errorf("storage: load device ids: %w", err)
		}
		if left != 0 {
			d.Left = time.Unix(0, left).UTC()
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: load device ids: %w", err)
	}
	return out, nil
}

// SaveDeviceIDs removes the assignments of the del ids and of the put
// ids, then stores put, in one transaction: an id that moves from one key
// to another, or a key that leaves one id for another, within the batch
// never meets itself. A key may hold one id only (Left zero): a batch
// that would give it two fails whole.
func (s *Store) SaveDeviceIDs(ctx context.Context, put []DeviceID, del []string) error {
	for _, d := range put {
		if d.Key == "" || d.ID == "" {
			return fmt.Errorf("%w: device id assignment needs a key and an id", ErrInvalid)
		}
	}
	now := s.now().UnixNano()
	return s.inTx(ctx, "save device ids", func(tx *sql.Tx) error {
		for _, id := range del {
			if _, err := tx.ExecContext(ctx, `DELETE FROM device_ids WHERE id = ?`, id); err != nil {
				return fmt.Errorf("storage: save device ids: %w", err)
			}
		}
		for _, d := range put {
			if _, err := tx.ExecContext(ctx, `DELETE FROM device_ids WHERE id = ?`, d.ID); err != nil {
				return fmt.Errorf("storage: save device ids: %w", err)
			}
		}
		for _, d := range put {
			var left int64
			if !d.Left.IsZero() {
				left = d.Left.UnixNano()
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO device_ids (id, key, base, assigned_at, left_at) VALUES (?, ?, ?, ?, ?)`,
				d.ID, d.Key, d.Base, now, left); err != nil {
				return fmt.Errorf("storage: save device id %s -> %s: %w", d.Key, d.ID, err)
			}
		}
		return nil
	})
}
