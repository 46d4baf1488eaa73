package main

import (
	"context"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/storage"
)

// deviceIDs is the catalog's device id registry (devices.IDRegistry) in the
// store: devices keeps no SQL, storage knows no devices.
type deviceIDs struct{ s *storage.Store }

func (r deviceIDs) LoadDeviceIDs(ctx context.Context) ([]devices.IDAssignment, error) {
	rows, err := r.s.LoadDeviceIDs(ctx)
	out := make([]devices.IDAssignment, len(rows))
	for i, d := range rows {
		out[i] = devices.IDAssignment(d)
	}
	return out, err
}

func (r deviceIDs) SaveDeviceIDs(ctx context.Context, put []devices.IDAssignment, del []string) error {
	rows := make([]storage.DeviceID, len(put))
	for i, a := range put {
		rows[i] = storage.DeviceID(a)
	}
	return r.s.SaveDeviceIDs(ctx, rows, del)
}
