// Package sched owns the installed rules armed in memory and fired:
// their triggers, modes, held windows, restart baselines and availability.
package sched

import (
	"context"
	"log/slog"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine/internal/access"
	"github.com/pilothouse/pilothouse/engine/internal/catalog"
	"github.com/pilothouse/pilothouse/engine/internal/promoted"
	"github.com/pilothouse/pilothouse/engine/internal/recorder"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// Deps is what the scheduler and its firings' worlds read of the engine,
// given once at New: plain parts read as fields (a firing reads them as
// it read the engine's), and the engine's own rules behind Host.
type Deps struct {
	Log   *slog.Logger
	Store *storage.Store
	Devs  *devices.Catalog // nil in tests of the read-only operations
	Cat   *catalog.Service
	Rec   *recorder.Recorder
	Rules *rules.Cache // what held programs and runs reuse
	Now   func() time.Time
	// Zone and Location place cron, time and sun triggers and runs.
	Zone      *time.Location
	Location  *rules.Location
	Limits    rules.Limits
	Retention time.Duration // of firing records
	History   bool          // the state history records: baselines read it
	Host      Host
}

// Host is what the scheduler asks of the engine: its promoted bodies,
// principals and rule switches. None is called per event: a firing asks
// only for LastChanged and an automation's Body, when its steps do.
type Host interface {
	// Body is the compiled promoted body of ref (nil: none).
	Body(ref string) *promoted.Body
	// Rebind binds an installed rule's program to its params again.
	Rebind(r storage.Rule, c *rules.Compiled, params map[string]any) (*rules.Compiled, error)
	// Principal is the configured principal of name.
	Principal(name string) *access.Principal
	// LastChanged is when state id last changed, for p.
	LastChanged(p *access.Principal, id string) (time.Time, bool)
	// Disable switches a rule off as its owner would, stored, saying why.
	Disable(ctx context.Context, r *Rule, why string) error
}

// place is the server's time zone and location, as runs see them.
func (d *Deps) place() rules.Place { return rules.Place{Zone: d.Zone, Location: d.Location} }

// ZoneText names a zone: its IANA name, or for the system's zone ("Local")
// its abbreviation and offset now.
func ZoneText(z *time.Location) string {
	if z == nil {
		return "UTC"
	}
	if n := z.String(); n != "Local" {
		return n
	}
	if name, _ := time.Now().In(z).Zone(); name != "" {
		return name
	}
	return time.Now().In(z).Format("-07:00")
}
