package model

import (
	"encoding/json"
	"iter"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/robfig/cron/v3"
)

// The run form: a validated program lowered once (lower.go) into what the
// interpreter, the planner and the engine's scheduler read, and nothing
// else. It is immutable, so programs share its parts freely. Every
// memory-layout decision lives here and in lower.go and intern.go: a
// house holds thousands of programs, and the collector marks every
// object of them on each cycle, so
//   - the steps of a program are one array, each child list a slice of
//     it; what only some kinds have (a wait, a branch, a loop) sits
//     behind one interface, in one array per kind;
//   - ids, labels, constants, expressions, templates, argument lists and
//     schedules are shared with every equal one held (through a Cache);
//   - durations and schedules are parsed once, and what a firing asks of
//     the whole body (does it take time, which steps wait) is computed
//     once.

// Form is the run form of a program (embedded in its Compiled).
type Form struct {
	ProgramName, description string
	Zone                     string          // the time zone plans name ("" = the server's)
	Loc                      *time.Location  // that zone (nil = unknown)
	ParamsSchema             json.RawMessage // the params schema (nil = none)
	RunTriggers              []RunTrigger
	Conds                    []RunCond
	Steps                    []RunStep
	WaitIDs                  []string // sorted ids of the wait steps (scenarios name them)
	max                      int      // queued/parallel bound; 0 = engine default
	ThrottleFor              time.Duration
	mode                     uint8 // index into modes
	takesTime                bool  // some step can make a run span time
	calls                    int   // call steps, anywhere in the body
	fields                   bool  // some trigger or wait has unbound param fields
}

// RunTrigger is one trigger of a run form: what the engine's scheduler
// arms and matches changes against.
type RunTrigger struct {
	TriggerID string
	EntityID  string // state, numeric and event triggers
	ToValue   any    // state: to; event: value
	FromValue any
	more      *triggerMore  // numeric, cron, time and sun triggers
	Hold      time.Duration // "for" (0 = none)
	kind      uint8         // index into TriggerKinds
	ToSet     bool
	FromSet   bool
}

// triggerMore holds what only numeric, cron, time and sun triggers have.
type triggerMore struct {
	above, below       float64
	hasAbove, hasBelow bool
	schedule           cron.Schedule // cron and time
	text               string        // cron: the spec; time: HH:MM[:SS]; sun: sunrise | sunset
	offset             time.Duration // sun
	// sel addresses the watched states of a state or numeric trigger
	// by selector (EntityID is then "").
	sel *Selector
	// State triggers' not_to / not_from (a value or a list of values).
	notTo, notFrom       any
	notToSet, notFromSet bool
	// inputs are the param fields of an unbound program (plans name
	// them); a bound program has none.
	inputs []RunInput
}

// RunCond is one condition of a run form: an expression or a time or sun window.
type RunCond struct {
	ID     string
	Expr   *Expr       // expr conditions
	Window *condWindow // time and sun conditions (window.go)
}

// RunStep is one step. Call and delay steps (most steps of a house's
// rules) need no more than its own fields; the other kinds keep their
// part in more.
type RunStep struct {
	ID   string
	Text string          // call: the target; stop: the reason
	Vals []NamedTemplate // call: the arguments; set: the values; sorted by name
	// More is the kind's own part: *durSpec (delay), *waitStep, *ifStep,
	// *chooseStep or *repeatStep; nil for call, set and stop steps.
	More  any
	kind  uint8 // index into StepKinds
	Flags uint8
}

// runStep flags.
const (
	StopError    uint8 = 1 << iota // stop: as a failure
	CallParam                      // call: text names the catalog-reference param holding the target
	CallContinue                   // call: continue_on_error
	CallSelect                     // call: More is the *Selector addressing the targets
)

// NamedTemplate is one argument of a call or one value of a set step.
type NamedTemplate struct {
	Name string
	Tmpl *Template
}

// DurSpec is a duration that may be templated: constant (parsed once, d)
// or evaluated on every run (t).
type DurSpec struct {
	Tmpl     *Template // as written (plans show it)
	Dur      time.Duration
	Constant bool
}

// WaitStep is what a wait step has beyond a run step.
type WaitStep struct {
	State, Event string
	To, From     Value
	Above, Below *float64
	Expr         *Expr
	Hold         *DurSpec // "for" (nil = none)
	Timeout      time.Duration
	Cont         bool       // continue_on_timeout
	ByParam      bool       // state or event names the catalog-reference param holding the id
	Inputs       []RunInput // unbound thresholds (plans name them; an unbound body binds them when it runs)
}

// IfStep is what an if step has beyond a run step.
type IfStep struct {
	Cond      *Expr
	Then, Els []RunStep
}

// ChooseStep is what a choose step has beyond a run step.
type ChooseStep struct {
	Arms []runArm
	Def  []RunStep
}

type runArm struct {
	Label string
	When  *Expr
	Do    []RunStep
}

// RepeatStep: exactly one of count, forEach, while and until is set
// (none: a loop that has no kind, which fails when run).
type RepeatStep struct {
	Count, ForEach *Template
	While, Until   *Expr
	Max            int
	Do             []RunStep
}

// Kind is the step's kind ("" for one outside StepKinds: a program built
// by hand).
func (s *RunStep) Kind() StepKind {
	if int(s.kind) >= len(StepKinds) {
		return ""
	}
	return StepKinds[s.kind].Kind
}

// runChild is one child list of a run step (see Step.Children).
type runChild struct {
	Label string
	Loop  bool
	Steps []RunStep
}

// Children walks the step's child lists in the order plans list them.
func (s *RunStep) Children() iter.Seq[runChild] {
	return func(yield func(runChild) bool) {
		switch m := s.More.(type) {
		case *IfStep:
			_ = yield(runChild{Label: LabelThen, Steps: m.Then}) && yield(runChild{Label: LabelElse, Steps: m.Els})
		case *ChooseStep:
			for _, a := range m.Arms {
				if !yield(runChild{Label: a.Label, Steps: a.Do}) {
					return
				}
			}
			yield(runChild{Label: LabelDefault, Steps: m.Def})
		case *RepeatStep:
			yield(runChild{Loop: true, Steps: m.Do})
		}
	}
}

// Trigger returns the trigger with this id (the last, were two alike), or
// nil.
func (f *Form) Trigger(id string) *RunTrigger {
	var t *RunTrigger
	for i := range f.RunTriggers {
		if f.RunTriggers[i].TriggerID == id {
			t = &f.RunTriggers[i]
		}
	}
	return t
}

// TriggerIDs lists the ids of the triggers, in order.
func (f *Form) TriggerIDs() []string {
	ids := make([]string, len(f.RunTriggers))
	for i := range f.RunTriggers {
		ids[i] = f.RunTriggers[i].TriggerID
	}
	return ids
}

// ID is the trigger's id.
func (t *RunTrigger) ID() string { return t.TriggerID }

// Kind is the trigger's kind.
func (t *RunTrigger) Kind() TriggerKind {
	if int(t.kind) >= len(TriggerKinds) {
		return ""
	}
	return TriggerKinds[t.kind].Kind
}

// Entity is the state or event entry a state, numeric or event trigger
// watches ("" for the others).
func (t *RunTrigger) Entity() string { return t.EntityID }

// For is how long a state or numeric trigger's condition must hold (0 =
// it fires at once).
func (t *RunTrigger) For() time.Duration { return t.Hold }

// To is a state trigger's "to" filter, or an event trigger's "value".
func (t *RunTrigger) To() Value { return Value{Set: t.ToSet, V: t.ToValue} }

// From is a state trigger's "from" filter.
func (t *RunTrigger) From() Value { return Value{Set: t.FromSet, V: t.FromValue} }

// Bounds are a numeric trigger's thresholds (nil when absent).
func (t *RunTrigger) Bounds() (above, below *float64) {
	m := t.more
	if m == nil {
		return nil, nil
	}
	if m.hasAbove {
		above = &m.above
	}
	if m.hasBelow {
		below = &m.below
	}
	return above, below
}

// Schedule is a cron or time trigger's schedule (nil for the others).
func (t *RunTrigger) Schedule() cron.Schedule {
	if t.more == nil {
		return nil
	}
	return t.more.schedule
}

// Spec is a cron trigger's spec, or a time trigger's time of day, as
// written ("" for the others).
func (t *RunTrigger) Spec() string {
	if k := t.Kind(); t.more == nil || (k != TriggerCron && k != TriggerTime) {
		return ""
	}
	return t.more.text
}

// CronSpec is the cron spec of a cron or time trigger's schedule (a time
// trigger's with seconds: "0 30 7 * * *" for "07:30").
func (t *RunTrigger) CronSpec() string {
	if t.Kind() == TriggerTime {
		return TimeOfDaySpec(t.Spec())
	}
	return t.Spec()
}

// Sun is a sun trigger's event ("sunrise" or "sunset") and offset.
func (t *RunTrigger) Sun() (event string, offset time.Duration) {
	if t.Kind() != TriggerSun || t.more == nil {
		return "", 0
	}
	return t.more.text, t.more.offset
}

// NextTime is the first instant after now a cron, time or sun trigger
// fires at, in zone: what the scheduler arms (its cron runner asks the
// schedule in zone; a sun trigger needs loc). Zero for other kinds, a sun
// trigger without loc, or a sun event beyond clock.NextSunEvent's horizon.
func (t *RunTrigger) NextTime(now time.Time, zone *time.Location, loc *clock.Location) time.Time {
	var next time.Time
	switch t.Kind() {
	case TriggerCron, TriggerTime:
		if sch := t.Schedule(); sch != nil {
			next = sch.Next(now.In(zone))
		}
	case TriggerSun:
		if loc != nil {
			sun, offset := t.Sun()
			next = clock.NextSunEvent(now.In(zone), *loc, sun, offset)
		}
	}
	if next.IsZero() {
		return next
	}
	return next.In(zone)
}

// Name is the program's name.
func (c *Compiled) Name() string { return c.ProgramName }

// Description is the program's description.
func (c *Compiled) Description() string { return c.description }

// Mode is how overlapping firings behave: one of the Mode* constants.
func (c *Compiled) Mode() string { return Modes[c.mode] }

// Max bounds a queued or parallel program's firings (0 = the engine's
// default).
func (c *Compiled) Max() int { return c.max }

// Throttle is the shortest time between two starts of the body (0 =
// none): a firing that passes its conditions sooner ends throttled.
func (c *Compiled) Throttle() time.Duration { return c.ThrottleFor }

// Params is the program's params schema (nil when it declares none).
func (c *Compiled) Params() json.RawMessage { return c.ParamsSchema }

// Triggers are the program's triggers, in program order: the engine arms
// them, keeping pointers into this list.
func (c *Compiled) Triggers() []RunTrigger { return c.RunTriggers }

// Reads lists the entries the triggers and conditions read, in order of
// mention (an id may come again): the states of state and numeric
// triggers, then the state('…') ids of each condition and the states its
// selector objects (states({…}), since({…})) resolved to when validated.
func (c *Compiled) Reads() []string {
	var out []string
	for i := range c.RunTriggers {
		if k := c.RunTriggers[i].Kind(); k == TriggerState || k == TriggerNumeric {
			out = append(out, c.RunTriggers[i].EntityID)
		}
	}
	for _, cd := range c.Conds {
		if cd.Expr != nil {
			for _, ref := range cd.Expr.Refs {
				out = append(out, ref.ID)
			}
			for _, sr := range cd.Expr.Sels {
				out = append(out, c.ExprSels[sr.Sel.Key()]...)
			}
		}
	}
	return out
}

// TakesTime reports whether the body holds a delay or a wait (anywhere):
// such firings can span a restart.
func (c *Compiled) TakesTime() bool { return c.takesTime }

// OnlyLastCalls reports whether the body's one call is its last top-level
// step, to an action named as written, and nothing in it takes time: a
// run of it waits for nothing but that call's acknowledgement, which
// RunInput.AsyncTail lets it not wait for.
func (c *Compiled) OnlyLastCalls() bool {
	if c.takesTime || c.calls != 1 || len(c.Steps) == 0 {
		return false
	}
	s := &c.Steps[len(c.Steps)-1]
	if s.Kind() != StepCall || s.Flags&(CallParam|CallContinue|CallSelect) != 0 {
		return false
	}
	if _, sub := c.Sub[s.Text]; sub {
		return false
	}
	e := c.Entry(s.Text)
	return e != nil && e.Kind == pilotage.KindAction
}

// Hold returns c as held for long under the program ref ref
// ("automation.<name>@…"): the same program, its name the copy inside ref
// (a house holds thousands: one string fewer each). The parts are shared,
// not copied; c stays as it is.
func (c *Compiled) Hold(ref string) *Compiled {
	h := *c
	if len(h.Sub) == 0 {
		h.Sub = nil
	}
	const prefix = "automation."
	if strings.HasPrefix(ref, prefix+c.ProgramName+"@") {
		h.ProgramName = ref[len(prefix) : len(prefix)+len(c.ProgramName)]
	}
	return &h
}
