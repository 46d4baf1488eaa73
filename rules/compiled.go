package rules

import (
	"encoding/json"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Catalog is the validator's view of the catalog: only the entries visible
// to the caller (spec §6.3 authorization scope). Hints and "unknown name"
// findings are computed from it alone, so invisible names are
// indistinguishable from nonexistent ones.
type Catalog interface {
	// Get returns the visible entry with this id.
	Get(id string) (*pilotage.Entry, bool)
	// IDs lists every visible id, sorted (for close-match hints).
	IDs() []string
	// Version is the caller-scoped catalog_version of this snapshot.
	Version() string
}

// Compiled is a validated program, ready to plan, install and run. It is
// produced once by Validate and shared read-only afterwards.
type Compiled struct {
	Program *Program
	Raw     json.RawMessage // the canonical program JSON it was decoded from
	Plan    *pilotage.Plan
	// Refs are the catalog ids the program references, sorted, unique.
	Refs []string
	// Entries are the referenced entries as validated (the promotion
	// baseline is taken from them).
	Entries map[string]*pilotage.Entry
	// Sub are the compiled bodies of the promoted automations it calls,
	// resolved at validation time (nil when resolved through World).
	Sub map[string]*Compiled
}
