package storage

import (
	"context"
	"database/sql"
	"fmt"
)

// DeviceID pins a catalog device id to the stable key of the device that
// discovered it first (devices.IDAssignment; see there for the keys).
type DeviceID struct {
	Key  string
	ID   string
	Base string // the id the device's name asks for
}

// LoadDeviceIDs returns every device id assignment.
func (s *Store) LoadDeviceIDs(ctx context.Context) ([]DeviceID, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT key, id, base FROM device_ids ORDER BY key`)
	if err != nil {
		return nil, fmt.Errorf("storage: load device ids: %w", err)
	}
	defer rows.Close()
	var out []DeviceID
	for rows.Next() {
		var d DeviceID
		if err := rows.Scan(&d.Key, &d.ID, &d.Base); err != nil {
			return nil, fmt.Errorf("storage: load device ids: %w", err)
		}
		out = append(out, d)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("storage: load device ids: %w", err)
	}
	return out, nil
}

// SaveDeviceIDs removes the assignments of the del keys and of the put
// keys, then stores put, in one transaction: an id that moves from one key
// to another within the batch never meets itself.
func (s *Store) SaveDeviceIDs(ctx context.Context, put []DeviceID, del []string) error {
	for _, d := range put {
		if d.Key == "" || d.ID == "" {
			return fmt.Errorf("%w: device id assignment needs a key and an id", ErrInvalid)
		}
	}
	now := s.now().UnixNano()
	return s.inTx(ctx, "save device ids", func(tx *sql.Tx) error {
		for _, k := range del {
			if _, err := tx.ExecContext(ctx, `DELETE FROM device_ids WHERE key = ?`, k); err != nil {
				return fmt.Errorf("storage: save device ids: %w", err)
			}
		}
		for _, d := range put {
			if _, err := tx.ExecContext(ctx, `DELETE FROM device_ids WHERE key = ?`, d.Key); err != nil {
				return fmt.Errorf("storage: save device ids: %w", err)
			}
		}
		for _, d := range put {
			if _, err := tx.ExecContext(ctx, `INSERT INTO device_ids (key, id, base, assigned_at) VALUES (?, ?, ?, ?)`,
				d.Key, d.ID, d.Base, now); err != nil {
				return fmt.Errorf("storage: save device id %s -> %s: %w", d.Key, d.ID, err)
			}
		}
		return nil
	})
}
