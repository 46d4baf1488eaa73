package sched

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/pilothouse/pilothouse/engine/internal/access"
	"github.com/pilothouse/pilothouse/engine/internal/bounds"
	"github.com/pilothouse/pilothouse/engine/internal/catalog"
	"github.com/pilothouse/pilothouse/engine/internal/pending"
	"github.com/pilothouse/pilothouse/engine/internal/promoted"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// Scheduler arms installed rules: an index from entity id to the triggers
// watching it (a firing is a map lookup, never a scan of all rules), cron
// entries for schedules, timers for sun events and held ("for") states.
type Scheduler struct {
	d *Deps

	chains bounds.Chains // the depth of the firings that last commanded each device
	shares bounds.Shares // the operations of each principal's rules
	live   bounds.Live   // each principal's firings running at once

	mu    sync.RWMutex
	rules map[string]*Rule
	index map[string][]*Trigger // state/event entity id → triggers
	avail []*Trigger            // availability triggers (availability.go); replaced, never changed in place
	cron  *cron.Cron
	unsub func()
	ctx   context.Context
	wg    sync.WaitGroup

	// Triggers by selector (selector.go); changed under mu.
	selIdx catalog.SelectIndex[*Trigger]
	over   selectorOverflow // those that address more states than they watch

	pend       *pending.Writer
	savedHolds map[string]storage.Pending // held windows persisted before the start
	bmu        sync.Mutex
	baselines  map[string]baseline // guarded by bmu: states not reported since the start (baseline.go)
	closing    bool                // set under mu by close: disarming keeps persisted windows
	work       *bounds.Pool        // goroutines firings run on

	offline atomic.Uint64 // state changes of offline devices (availability.go)
	looped  atomic.Uint64 // rules disabled because they kept firing themselves (loop.go)

	// SlowHere: a firing run here longer than this is slow. SunRecheck:
	// the longest a sun trigger's timer waits. Tests shorten them.
	SlowHere   time.Duration
	SunRecheck time.Duration
}

// Rule is one installed, enabled rule in memory.
//
// It keeps only what arming and firing read of the stored rule (the rest
// is read from storage when a rule is listed): a house holds thousands.
type Rule struct {
	s         *Scheduler
	name      string // the rule's name
	ref       string // its program_ref
	c         *rules.Compiled
	params    map[string]any // nil when the program takes none
	principal *access.Principal
	triggers  []*Trigger
	// ceiling is the risk the rule's program was promoted (and approved)
	// at; a firing's call to an entry above it is refused (nil: no plan).
	share atomic.Pointer[bounds.Share] // its firings' operations (fire.go runShared), made at the first

	ceiling    pilotage.RiskHints
	hasCeiling bool

	enabled bool // guarded by s.mu
	waits   bool // the body has delays or waits (recorded as running first)
	stopped bool // guarded by mu
	// here: a firing runs on the goroutine that fires it (see
	// bounds.Pool.RunHere); cleared for good by a body that took too long.
	here     atomic.Bool
	slowHere atomic.Int32 // firings run here that took longer than slowHere

	mu         sync.Mutex
	checkedGen uint64 // device catalog generation BrokenReason last ran against (0 = never)
	running    []*Firing
	queue      []queuedFire
	broken     string
	lastBody   time.Time // when the body last started (throttled rules)

	looped atomic.Bool // disabled by the loop guard (loop.go): said once

	// The trigger of a one-trigger rule (most rules), allocated with it.
	one     Trigger
	oneList [1]*Trigger
}

// Trigger is one trigger of an armed rule.
type Trigger struct {
	r    *Rule
	t    *rules.RunTrigger // in the rule's run form
	self [1]*Trigger       // {itself}: the index entry of an entity only it watches
	mu   sync.Mutex
	hold *heldWindow // pending "for" window (a trigger by selector's: one per state)

	// Guarded by the scheduler's mu while armed:
	cronID cron.EntryID  // its cron entry (cron and time triggers; 0 = none)
	suns   []*time.Timer // its sun event timers since armed (sun triggers)
}

// ArmInfo is the arming summary of a rule.
type ArmInfo struct {
	Triggers []pilotage.TriggerInfo
	NextFire *time.Time
	Held     bool // NextFire is an open "for" window's end
}

// New makes the scheduler of the engine that gives d; Start arms its rules.
func New(d *Deps) *Scheduler {
	return &Scheduler{
		d:          d,
		rules:      map[string]*Rule{},
		index:      map[string][]*Trigger{},
		work:       bounds.New(),
		SlowHere:   defaultSlowHere,
		live:       bounds.Live{Max: int64(d.Limits.MaxLiveFiringsPerPrincipal), AdminMax: int64(d.Limits.MaxLiveFiringsAdmin)},
		SunRecheck: sunRecheck,
		cron:       cron.New(cron.WithLocation(d.Zone), cron.WithChain(cron.Recover(cron.DiscardLogger))),
	}
}

// Start loads every installed rule from storage and arms the enabled ones.
func (s *Scheduler) Start(ctx context.Context) error {
	s.ctx = ctx
	s.pend = pending.New(s.d.Store, s.d.Log)
	s.savedHolds = map[string]storage.Pending{}
	if saved, err := s.d.Store.ListPending(ctx, ""); err == nil {
		for _, p := range saved {
			if p.Kind == "for" {
				s.savedHolds[p.ID] = p
			}
		}
	} else {
		s.d.Log.Warn("reading held windows", "err", err)
	}
	list, err := s.d.Store.ListRules(ctx)
	if err != nil {
		return fmt.Errorf("engine: loading rules: %w", err)
	}
	warnLookAlikes(s.d.Log, list)
	for _, r := range list {
		b := s.d.Host.Body(r.Ref)
		if b == nil {
			_ = s.d.Store.SetRuleBroken(ctx, r.Name, "its program no longer compiles")
			continue
		}
		var params map[string]any
		if r.Damaged != "" || (len(r.Params) > 0 && json.Unmarshal(r.Params, &params) != nil) {
			// Not armed: without its params it would fire with other
			// inputs than it was deployed with. The listing says why.
			s.d.Log.Warn("rule not armed: its stored row is damaged", "rule", r.Name, "reason", r.Damaged)
			continue
		}
		c := b.Compiled()
		if c.Binds() {
			bc, err := s.d.Host.Rebind(r, c, params)
			if err != nil {
				s.d.Log.Warn("rule no longer binds; it is marked broken", "rule", r.Name, "err", err)
				_ = s.d.Store.SetRuleBroken(ctx, r.Name, err.Error())
				continue
			}
			c = bc
		}
		s.Install(r, c, params, 0)
	}
	reported := s.loadBaselines(ctx)
	if s.d.Devs != nil {
		s.unsub = s.d.Devs.Subscribe(s.OnChange)
		s.replayBaselines(reported)
	}
	s.cron.Start()
	return nil
}

// Close disarms everything and waits for running firings to end (they are
// cancelled and recorded as interrupted).
func (s *Scheduler) Close() {
	if s.unsub != nil {
		s.unsub()
	}
	<-s.cron.Stop().Done()
	s.mu.Lock()
	s.closing = true
	for _, r := range s.rules {
		s.disarmLocked(r)
	}
	s.mu.Unlock()
	s.wg.Wait()
	if s.pend != nil {
		s.pend.Close()
	}
}

// Install arms a rule, replacing one of the same name atomically: the index
// never holds both.
// validatedAt is the device catalog generation the body was just validated
// against (0 when unknown, e.g. re-arming at start-up): firings on that same
// generation skip the broken check. cancelled counts the replaced rule's
// firings that were in progress.
func (s *Scheduler) Install(rule storage.Rule, c *rules.Compiled, params map[string]any, validatedAt uint64) (ar *Rule, cancelled int) {
	p := s.d.Host.Principal(rule.Principal)
	if len(params) == 0 {
		params = nil // a run copies its params: nil reads as none
	}
	ar = &Rule{s: s, name: rule.Name, ref: rule.Ref, enabled: rule.Enabled, c: c, params: params, principal: p,
		broken: rule.Broken, waits: c.TakesTime(), checkedGen: validatedAt}
	if b := s.d.Host.Body(rule.Ref); b != nil && b.HasPlan() {
		ar.ceiling, ar.hasCeiling = b.MaxHints(), true
	}
	// A throttled body writes its window before it runs (throttleGate):
	// on a worker, not on the goroutine that delivers the events.
	ar.here.Store(c.OnlyLastCalls() && c.Throttle() == 0)
	if c.Throttle() > 0 {
		ar.lastBody = s.lastBodyStart(rule.Name)
	}
	switch ts := c.Triggers(); len(ts) {
	case 0:
	case 1:
		ar.one.r, ar.one.t = ar, &ts[0]
		ar.one.self[0] = &ar.one
		ar.oneList[0] = &ar.one
		ar.triggers = ar.oneList[:]
	default:
		ats := make([]Trigger, len(ts))
		ar.triggers = make([]*Trigger, len(ts))
		for i := range ts {
			at := &ats[i]
			at.r, at.t = ar, &ts[i]
			at.self[0] = at
			ar.triggers[i] = at
		}
	}
	s.d.Cat.SetBound(rule.Name, rule.Ref, ar.boundIDs())
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.rules[rule.Name]; old != nil {
		cancelled = s.disarmLocked(old)
	}
	s.rules[rule.Name] = ar
	if ar.enabled {
		s.armLocked(ar)
	}
	return ar, cancelled
}

func (s *Scheduler) armLocked(ar *Rule) {
	ar.mu.Lock()
	ar.stopped = false
	ar.mu.Unlock()
	for _, at := range ar.triggers {
		t := at.t
		switch t.Kind() {
		case rules.TriggerState, rules.TriggerNumeric, rules.TriggerEvent:
			if t.Selector() != nil {
				s.selIdx.Add(at)
				if t.For() > 0 {
					at.resumeWindows()
				}
				continue
			}
			if ats := s.index[t.Entity()]; len(ats) == 0 {
				s.index[t.Entity()] = at.self[:] // no array of its own for an entity one trigger watches
			} else {
				s.index[t.Entity()] = append(ats, at)
			}
			if t.For() > 0 && t.Kind() != rules.TriggerEvent {
				at.resumeHold()
			}
		case rules.TriggerCron, rules.TriggerTime:
			sch := t.Schedule() // parsed when the program was decoded
			if sch == nil {
				s.d.Log.Warn("trigger has no schedule", "rule", ar.name, "trigger", t.ID())
				continue
			}
			because := "the schedule " + t.CronSpec() + " came due"
			if t.Kind() == rules.TriggerTime {
				because = "it was " + t.Spec()
			}
			at.cronID = s.cron.Schedule(sch, cron.FuncJob(func() { at.fire(nil, nil, because) }))
		case rules.TriggerSun:
			s.armSun(ar, at, time.Time{})
		case rules.TriggerAvailable:
			s.avail = append(s.avail[:len(s.avail):len(s.avail)], at)
			switch {
			case t.For() > 0 && t.Selector() != nil:
				at.resumeWindows()
			case t.For() > 0:
				at.resumeHold()
			}
		}
	}
}

// sunRecheck is how long the scheduler waits at most before it looks for
// a sun trigger's next event again.
const sunRecheck = 24 * time.Hour

// armSun schedules the next sunrise/sunset (+offset) after now, and after
// notBefore (the event it last fired for: a timer a moment early must not
// find that event again), and re-arms after it. An event more than
// s.SunRecheck away (through polar night or midnight sun, none for
// months) is looked for again after that long instead, so the trigger is
// armed every day and no timer waits for months.
func (s *Scheduler) armSun(ar *Rule, at *Trigger, notBefore time.Time) {
	loc := s.d.Location
	if loc == nil {
		return
	}
	sun, offset := at.t.Sun()
	now := s.d.Now()
	from := now
	if from.Before(notBefore) {
		from = notBefore
	}
	next := rules.NextSunEvent(from.In(s.d.Zone), *loc, sun, offset)
	wait, fires := next.Sub(now), true
	if next.IsZero() || wait > s.SunRecheck {
		wait, fires = s.SunRecheck, false
	}
	var tm *time.Timer
	tm = time.AfterFunc(wait, func() {
		if fires {
			notBefore = next
			at.fire(nil, nil, "it was "+rules.SunPhrase(sun, offset)+" ("+next.In(s.d.Zone).Format("15:04")+")")
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		// Only the trigger's current timer re-arms: one disarmed since
		// (and perhaps armed again) leaves it to the newer one.
		if s.rules[ar.name] == ar && ar.enabled && len(at.suns) == 1 && at.suns[0] == tm {
			s.armSun(ar, at, notBefore)
		}
	})
	at.suns = append(at.suns[:0], tm) // the timer it replaces has fired
}

// disarmLocked removes a rule's triggers and cancels its firings; it
// returns how many firings were in progress (their remaining steps will
// not run: callers say so to whoever asked).
func (s *Scheduler) disarmLocked(ar *Rule) int {
	for _, at := range ar.triggers {
		if at.t.Selector() != nil {
			if at.t.Kind() == rules.TriggerAvailable {
				s.unwatchAvailability(at)
			} else {
				s.selIdx.Remove(at)
			}
			s.over.forget(at)
			at.mu.Lock()
			at.closeHold(!s.closing) // at shutdown the windows' deadlines are kept
			at.mu.Unlock()
			continue
		}
		entity := at.t.Entity()
		ids := s.index[entity]
		// A new array: OnChange reads index slices after releasing the
		// lock (arming only appends past the length a reader holds).
		for i, x := range ids {
			if x == at {
				ids = append(ids[:i:i], ids[i+1:]...)
				break
			}
		}
		if len(ids) == 0 {
			delete(s.index, entity)
		} else {
			s.index[entity] = ids
		}
		at.mu.Lock()
		at.closeHold(!s.closing) // at shutdown the window's deadline is kept
		at.mu.Unlock()
		if at.cronID != 0 {
			s.cron.Remove(at.cronID)
			at.cronID = 0
		}
		for _, tm := range at.suns {
			tm.Stop()
		}
		at.suns = nil
		s.unwatchAvailability(at)
	}
	ar.mu.Lock()
	defer ar.mu.Unlock()
	ar.stopped = true
	for range ar.queue {
		ar.giveLive()
	}
	ar.queue = nil
	for _, f := range ar.running {
		f.stopLocked()
	}
	return len(ar.running)
}

// Info summarises a rule's triggers and next scheduled time.
func (ar *Rule) Info() ArmInfo {
	d := ar.s.d
	var out ArmInfo
	now := d.Now()
	for _, at := range ar.triggers {
		t := at.t
		ti := pilotage.TriggerInfo{ID: t.ID(), Kind: string(t.Kind()), Entity: t.Entity()}
		if t.Selector() != nil {
			ti.Note = at.overflowNote()
		}
		next := t.NextTime(now, d.Zone, d.Location)
		switch t.Kind() {
		case rules.TriggerCron, rules.TriggerTime:
			ti.Spec = t.Spec()
		case rules.TriggerSun:
			sun, offset := t.Sun()
			ti.Spec = sun
			if offset != 0 {
				ti.Spec += " " + offset.String()
			}
		}
		if k := t.Kind(); k == rules.TriggerCron || k == rules.TriggerTime || k == rules.TriggerSun {
			ti.TimeZone = ZoneText(d.Zone)
		}
		if until, held := at.heldUntil(); held && (next.IsZero() || until.Before(next)) {
			next, ti.Held = until, true
		}
		if !next.IsZero() {
			n := next.In(d.Zone)
			ti.NextFire = &n
			if out.NextFire == nil || n.Before(*out.NextFire) {
				out.NextFire, out.Held = &n, ti.Held
			}
		}
		out.Triggers = append(out.Triggers, ti)
	}
	return out
}

// Rule returns the armed (or disabled) rule of name (nil: none).
func (s *Scheduler) Rule(name string) *Rule {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rules[name]
}

// SetEnabled arms or disarms a rule in memory; it returns how many of
// its firings in progress a disable cancelled.
func (s *Scheduler) SetEnabled(name string, on bool) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	ar := s.rules[name]
	if ar == nil || ar.enabled == on {
		return 0
	}
	ar.enabled = on
	if on {
		s.armLocked(ar)
		return 0
	}
	return s.disarmLocked(ar)
}

// Remove disarms and forgets a rule; it returns how many of its firings
// in progress were cancelled.
func (s *Scheduler) Remove(name string) int {
	s.d.Cat.SetBound(name, "", nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	ar := s.rules[name]
	if ar == nil {
		return 0
	}
	delete(s.rules, name)
	return s.disarmLocked(ar)
}

// Missing lists the referenced entries the rule's principal cannot find
// in the catalog now, without side effects (BrokenReason, run when the
// rule fires, also records the rule broken).
func (ar *Rule) Missing() []string {
	d := ar.s.d
	if d.Devs == nil {
		return nil
	}
	v := d.Cat.View(ar.principal)
	var out []string
	for _, id := range ar.c.Refs {
		if _, ok := v.Get(id); !ok {
			out = append(out, id)
		}
	}
	return out
}

// BrokenReason checks that every entry the rule references still exists
// with the shape it was validated against; "" means fine.
func (ar *Rule) BrokenReason() string {
	d := ar.s.d
	if d.Devs == nil {
		return ""
	}
	v := d.Cat.View(ar.principal)
	for i, en := range ar.c.Entries {
		id := ar.c.Refs[i]
		cur, ok := v.Get(id)
		if !ok {
			return "referenced entry " + shown.Quote(id) + " vanished from the catalog"
		}
		if string(promoted.BaselineJSON(promoted.BaselineOf(cur))) != string(promoted.BaselineJSON(promoted.BaselineOf(en))) {
			return "referenced entry " + shown.Quote(id) + " changed shape since install"
		}
	}
	return ""
}
