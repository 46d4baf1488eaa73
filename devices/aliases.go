package devices

import "github.com/pilothouse/pilothouse/devices/internal/model"

// The model's records that the catalog's callers name.
type (
	// AreaRule assigns configured devices to an area (Options.Areas).
	AreaRule = model.AreaRule
	// IDRegistry persists the device ids discovery assigns (Options.IDs).
	IDRegistry = model.IDRegistry
	// IDAssignment pins an id to a device's stable key.
	IDAssignment = model.IDAssignment

	// action is one callable entry and how to carry it out.
	action = model.Action
)
