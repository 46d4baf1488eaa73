package model

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Language is the one Language identifier this package implements.
const Language = "automation/1"

// Modes for overlapping firings, as Home Assistant users know them.
const (
	ModeSingle   = "single"
	ModeRestart  = "restart"
	ModeQueued   = "queued"
	ModeParallel = "parallel"
)

// Program is a decoded automation/1 program. Every node keeps the JSON
// Pointer it was decoded from (Ptr), so diagnostics and traces can locate it.
type Program struct {
	Name        string
	Description string
	Mode        string          // one of the Mode* constants; "" decodes to single
	Max         int             // queued/parallel bound; 0 = engine default
	Throttle    time.Duration   // at most one body run per this long (0 = none)
	Params      json.RawMessage // JSON Schema of the inputs (nil = none)
	// RefParams are the params declared as catalog references (with
	// "catalog"), by name (nil = none).
	RefParams  map[string]*RefParam
	Triggers   []*Trigger
	Conditions []*Condition
	Steps      []*Step
}

// TriggerKind is the closed set of trigger kinds.
type TriggerKind string

// Trigger kinds.
const (
	TriggerState   TriggerKind = "state"   // {"state": id, "to"?, "from"?, "for"?}
	TriggerNumeric TriggerKind = "numeric" // {"state": id, "above"?, "below"?, "for"?}
	TriggerEvent   TriggerKind = "event"   // {"event": id, "value"?}
	TriggerCron    TriggerKind = "cron"    // {"cron": "0 30 18 * * *"} seconds optional
	TriggerTime    TriggerKind = "time"    // {"at": "07:30"} or "07:30:15"
	TriggerSun     TriggerKind = "sun"     // {"sun": "sunrise"|"sunset", "offset"?: "-30m"}
	// TriggerAvailable watches whether an entry's device is reachable.
	TriggerAvailable TriggerKind = "available" // {"available": id | selector, "to"?: false, "for"?}
)

// Value is an optional JSON literal (to/from/value filters).
type Value struct {
	Set bool
	V   any
}

// Trigger is one trigger of a program, as decoded: the fields of its
// Kind are set. Cron and time triggers carry their parsed schedule.
type Trigger struct {
	Ptr    string
	ID     string
	Kind   TriggerKind
	Entity string // state or event entry id
	// Select, when set, addresses the watched states by area, type or
	// tag instead of Entity (a state or numeric trigger).
	Select *Selector
	To     Value
	From   Value
	// NotTo, NotFrom: state triggers fire except into / out of these.
	NotTo, NotFrom Value
	For            time.Duration // held duration (0 = none)
	Above          *float64      // numeric
	Below          *float64      // numeric
	Cron           string
	At             string // HH:MM[:SS]
	Sun            string // sunrise | sunset
	Offset         time.Duration
	// Schedule is a cron or time trigger's schedule, parsed when decoded
	// (nil when the spec does not parse).
	Schedule cron.Schedule
	// Inputs are the fields written as "{{ params.<name> }}" (above,
	// below, for, at, offset): unset until execute binds them.
	Inputs []ParamField
}

// ConditionKind is the closed set of condition kinds.
type ConditionKind string

// Condition kinds.
const (
	CondExpr ConditionKind = "expr" // {"expr": "state('hall_motion.illuminance') < 30"}
	CondTime ConditionKind = "time" // {"time": {"after"?: "22:00", "before"?: "06:00", "weekday"?: ["mon", …]}}
	CondSun  ConditionKind = "sun"  // {"sun": {"after"?: "sunset", "after_offset"?, "before"?: "sunrise", "before_offset"?}}
)

// Condition is one condition; all must hold for the body to run. Kind
// says which of Expr (expr) and Window (time, sun) is set.
type Condition struct {
	Ptr    string
	ID     string
	Kind   ConditionKind
	Expr   *Expr
	Window *Window
}

// Window is what a time or sun condition allows: from After (inclusive)
// until Before (exclusive), either bound optional. When After is later in
// the day than Before the window crosses midnight ("after 22:00, before
// 06:00" is the night). A time window's bounds are clock times
// ("HH:MM[:SS]") and it may name weekdays; a sun window's are "sunrise"
// or "sunset", each with an offset.
type Window struct {
	After, Before             string
	AfterOffset, BeforeOffset time.Duration  // sun
	Weekdays                  []time.Weekday // time; nil = every day
	// Inputs are the bounds (time) or offsets (sun) written as
	// "{{ params.<name> }}".
	Inputs []ParamField
}

// StepKind is the closed set of step kinds.
type StepKind string

// Step kinds.
const (
	StepCall   StepKind = "call"
	StepDelay  StepKind = "delay"
	StepWait   StepKind = "wait"
	StepIf     StepKind = "if"
	StepChoose StepKind = "choose"
	StepRepeat StepKind = "repeat"
	StepSet    StepKind = "set"
	StepStop   StepKind = "stop"
)

// Step is one body step, as decoded: exactly the fields of its Kind are
// set; Children walks its child step lists.
type Step struct {
	Ptr  string
	ID   string
	Kind StepKind

	// call
	Call string // catalog id of an action or automation
	// Target, when set, addresses every action it resolves to instead
	// of Call (a call by area, type or tag).
	Target *Selector
	Args   map[string]*Template // argument values; templates are compiled
	// ContinueOnError: a failed command (refused, not sent) does not end
	// the run (Home Assistant's continue_on_error).
	ContinueOnError bool

	// delay
	Delay *Template // duration text, possibly templated ("{{ params.hold }}")

	// wait
	Wait              *WaitSpec
	Timeout           time.Duration // 0 = no timeout (bounded by the run's wall time)
	ContinueOnTimeout bool

	// if
	If   *Expr
	Then []*Step
	Else []*Step

	// choose
	Choose  []*Arm
	Default []*Step

	// repeat
	Repeat *RepeatSpec
	Do     []*Step

	// set: variable name → value
	Set map[string]*Template

	// stop
	Stop  string // reason
	Error bool   // stop as a failure
}

// WaitSpec is what a wait step waits for: a state change like a trigger, or
// an expression becoming true.
type WaitSpec struct {
	Ptr   string
	State string // state entry id (with To/From/Above/Below), or ""
	Event string // event entry id (with To as value filter), or ""
	To    Value
	From  Value
	Above *float64
	Below *float64
	For   *Template // held duration, may be templated
	Expr  *Expr     // or: wait until this expression is true
	// Inputs are the thresholds written as "{{ params.<name> }}".
	Inputs []ParamField
}

// Arm is one option of a choose step. Label is unique within the step and is
// the label plans and trace decisions use; it defaults to "arm<n>" (1-based).
type Arm struct {
	Ptr   string
	Label string
	When  *Expr
	Do    []*Step
}

// RepeatSpec bounds a loop: exactly one of Count, While, Until, ForEach.
// While/Until loops carry Max (required, ≤ the engine limit).
type RepeatSpec struct {
	Ptr     string
	Count   *Template // integer, possibly templated
	While   *Expr
	Until   *Expr
	ForEach *Template // array value or expression yielding an array
	Max     int
}

// Arm labels used by if steps.
const (
	LabelThen    = "then"
	LabelElse    = "else"
	LabelDefault = "default"
)

// Modes are the Mode* constants, in the order the run form indexes them.
var Modes = []string{ModeSingle, ModeRestart, ModeQueued, ModeParallel}

// TimeOfDaySpec is the cron spec (with seconds) of a time trigger's
// "HH:MM[:SS]".
func TimeOfDaySpec(at string) string {
	parts := strings.Split(at, ":")
	field := func(i int) string {
		if i >= len(parts) {
			return "0"
		}
		if f := strings.TrimLeft(parts[i], "0"); f != "" {
			return f
		}
		return "0"
	}
	return field(2) + " " + field(1) + " " + field(0) + " * * *"
}
