// Package engine implements the Pilotage semantics of Pilothouse, the one
// door its transports (MCP, web) use: the manifest, the execute pipeline in
// the spec's processing order, approvals, and the scoped API over the
// catalog, rules, runs, state history, the logbook and event streams; what
// only it needs lives in engine/internal (the armed rules and their firings
// in engine/internal/sched).
package engine

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine/internal/admission"
	"github.com/pilothouse/pilothouse/engine/internal/approval"
	"github.com/pilothouse/pilothouse/engine/internal/catalog"
	"github.com/pilothouse/pilothouse/engine/internal/history"
	"github.com/pilothouse/pilothouse/engine/internal/logbook"
	"github.com/pilothouse/pilothouse/engine/internal/promoted"
	"github.com/pilothouse/pilothouse/engine/internal/recorder"
	"github.com/pilothouse/pilothouse/engine/internal/sched"
	"github.com/pilothouse/pilothouse/engine/internal/served"
	"github.com/pilothouse/pilothouse/engine/internal/uptime"
	"github.com/pilothouse/pilothouse/helpers"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// Config is the engine's part of the configuration.
type Config struct {
	// Retention of run records (ISO 8601 in the manifest). Default 30 days.
	Retention time.Duration
	// KeepPerStatus bounds stored firings per rule and per status.
	KeepPerStatus int
	// Location for sunrise/sunset triggers (nil = not configured).
	Location *Location
	// LocationSource says where Location came from: LocationConfigured
	// (the default when Location is set) or LocationDemo.
	LocationSource string
	// TimeZone for cron, time-of-day and expression helpers.
	TimeZone *time.Location
	// Limits of validation and execution.
	Limits rules.Limits
	// Principals; empty = a single all-seeing owner.
	Principals []*Principal
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// History configures the state history recorder.
	History HistoryConfig
	// ApprovalTTL is how long a risky deploy's approval request stays
	// open (default DefaultApprovalTTL); WebURL is the web UI's base URL
	// its approval page is linked from.
	ApprovalTTL time.Duration
	WebURL      string
	// Approval is the risk-gate policy of principals without their own;
	// the zero value requires approval for destructive and openWorld.
	Approval ApprovalPolicy
	// Logbook configures the logbook's writer (kept as long as runs).
	Logbook LogbookConfig
}

// Location is a point on Earth for sun triggers and conditions.
type Location = rules.Location

// place is the server's time zone and location, as runs see them.
func (e *Engine) place() rules.Place {
	return rules.Place{Zone: e.cfg.TimeZone, Location: e.cfg.Location}
}

// RetentionText renders the retention as an ISO 8601 duration.
func (c *Config) RetentionText() string {
	d := c.Retention
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("P%dD", int(d/(24*time.Hour)))
	}
	return fmt.Sprintf("PT%dS", int(d/time.Second))
}

func (c *Config) defaults() {
	if c.Retention <= 0 {
		c.Retention = 30 * 24 * time.Hour
	}
	if c.KeepPerStatus <= 0 {
		c.KeepPerStatus = 50
	}
	if c.TimeZone == nil {
		c.TimeZone = time.Local
	}
	// Every unset bound from the defaults (was: all of them replaced when
	// MaxSteps was unset, dropping any other bound the caller had set).
	c.Limits = c.Limits.WithDefaults()
	if c.Now == nil {
		c.Now = time.Now
	}
	c.History.Defaults()
	if c.ApprovalTTL <= 0 {
		c.ApprovalTTL = DefaultApprovalTTL
	}
}

// Engine ties the catalog, the Language, storage and the scheduler together.
type Engine struct {
	cfg  Config
	log  *slog.Logger
	devs *devices.Catalog
	// helpers, when set (SetHelpers), owns the household's helpers.
	helpers *helpers.Manager
	store   *storage.Store

	cat   *catalog.Service
	sched *sched.Scheduler // nil without storage
	deps  *sched.Deps      // what the scheduler and live worlds read of the engine
	rec   *recorder.Recorder
	hist  *history.Recorder // nil when off, or without devices or storage
	book  *logbook.Logbook  // nil without storage
	// rules is what validations, held programs and runs reuse: the
	// engine owns it, rules keeps no state of its own.
	rules *rules.Cache

	guidesOnce sync.Once
	guides     []rules.Guide // as served (Guides)

	mu     sync.Mutex
	closed bool
	bodies promoted.Held // program_ref → compiled promoted body

	admit  *admission.Gate // test runs in flight and what they may store
	served *served.Gate    // stored run records being served (limits.MaxServedRunBytes)

	deniedMu       sync.Mutex    // counting and storing a refusal (storeRefusable)
	deniedUnstored atomic.Uint64 // refusals not stored over the per-principal bound

	approvals *approval.Book // the risk gate's requests

	up *uptime.Tracker // when the server ran (charts' gaps)

	hubMu  sync.Mutex
	subs   map[chan Event]struct{}
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New builds an engine. store may be nil only in tests of the read-only
// operations (the manifest then declares no execute).
func New(cfg Config, devs *devices.Catalog, store *storage.Store, log *slog.Logger) *Engine {
	cfg.defaults()
	if log == nil {
		log = slog.Default()
	}
	e := &Engine{cfg: cfg, log: log, devs: devs, store: store, rules: rules.NewCache(),
		served: served.New(cfg.Limits.MaxServedRunBytes)}
	e.approvals, e.admit = e.newApprovals(), e.newAdmission()
	if store != nil {
		store.SetClock(cfg.Now)
	}
	e.cat = catalog.New(devs)
	e.deps = &sched.Deps{Log: log, Store: store, Devs: devs, Cat: e.cat, Rules: e.rules, Now: cfg.Now, Zone: cfg.TimeZone,
		Location: cfg.Location, Limits: cfg.Limits, Retention: cfg.Retention, Host: (*schedHost)(e),
		History: store != nil && devs != nil && !cfg.History.Off}
	if store != nil {
		e.up = uptime.New(store, log, cfg.Now)
		e.rec = recorder.New(store, log, cfg.KeepPerStatus)
		e.rec.Announce = e.announceFiring
		e.rec.MaxRuleBytes, e.rec.MaxPrincipalBytes = int64(cfg.Limits.MaxStoredRuleBytes), int64(cfg.Limits.MaxStoredFiringBytes)
		e.rec.Unbounded = func(name string) bool { return e.principalByName(name).Admin }
		e.deps.Rec = e.rec
		e.sched = sched.New(e.deps)
		// Each principal's rules keep their own part of the logbook (the
		// owner's, named among them, is told apart by the logbook).
		book := cfg.Logbook
		book.Guests = make([]string, 0, len(cfg.Principals))
		for _, p := range cfg.Principals {
			book.Guests = append(book.Guests, p.Name)
		}
		e.book = logbook.New(store, log.With("part", "logbook"), book, cfg.Retention, cfg.Now)
	}
	if store != nil && devs != nil && !cfg.History.Off {
		e.hist = history.New(store, devs, log.With("part", "history"), cfg.History, cfg.Now)
	}
	return e
}

// Now is the engine's clock.
func (e *Engine) Now() time.Time { return e.cfg.Now() }

// Config returns the effective configuration.
func (e *Engine) Config() Config { return e.cfg }

// Start re-arms installed rules from storage and starts the background
// jobs. It returns after the rules are armed.
func (e *Engine) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	if e.store == nil {
		return nil
	}
	if err := e.loadAutomations(ctx); err != nil {
		return err
	}
	// A full disk must not keep the house from starting: the firings stay
	// recorded as running until a start that can write (the store's
	// write status says why meanwhile).
	if n, err := e.store.MarkInterrupted(ctx, e.Now()); err != nil {
		e.log.Error("could not record the firings the last stop interrupted; starting all the same", "err", err)
	} else if n > 0 {
		e.log.Info("firings interrupted by the last stop recorded", "count", n)
	}
	e.rec.Start()
	if err := e.sched.Start(ctx); err != nil {
		e.rec.Close()
		return err
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		e.purgeLoop(ctx)
	}()
	e.up.Start(ctx, &e.wg)
	if e.hist != nil {
		e.hist.Start(ctx) // after the scheduler: its subscriber runs first
	}
	e.book.Start(ctx, e.devs)
	e.Note("server", fmt.Sprintf("Pilothouse started: %d rules armed", e.sched.Armed()))
	return nil
}

// Close stops the scheduler, drains the recorder and waits for background
// jobs. It is idempotent.
func (e *Engine) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	e.mu.Unlock()
	if e.cancel != nil {
		e.cancel()
	}
	if e.sched != nil {
		e.sched.Close()
	}
	if e.hist != nil {
		e.hist.Close()
	}
	if e.rec != nil {
		e.rec.Close()
	}
	// Last: the firings the recorder announced while draining are in it.
	if e.book.Started() {
		e.Note("server", "Pilothouse stopped")
		e.book.Close()
	}
	e.wg.Wait()
}

func (e *Engine) purgeLoop(ctx context.Context) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if n, err := e.store.PurgeExpired(ctx, e.Now(), e.cfg.Retention); err != nil {
			if ctx.Err() == nil {
				e.log.Warn("purging expired runs", "err", err)
			}
		} else if n > 0 {
			e.log.Info("purged expired runs", "count", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// principal resolves the caller of an operation.
func (e *Engine) principal(ctx context.Context) *Principal {
	if p := PrincipalFrom(ctx); p != nil {
		return p
	}
	return Owner
}
