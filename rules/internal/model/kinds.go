package model

import (
	"iter"
	"slices"
	"strings"
)

// StepKindInfo is one row of the closed step-kind table.
type StepKindInfo struct {
	Kind StepKind
	// Members are the members a step of this kind may have; the member
	// named like the kind selects it.
	Members []string
	// TakesTime: a step of this kind can make a run span time (and a
	// restart), so a firing of a body holding one is recorded as running
	// before it starts.
	TakesTime bool
}

// StepKinds is the closed set of step kinds, in the order the decoder
// tries their members and the closed-sets guide lists them. The decoder,
// validator, interpreter, planner and guide all read it.
var StepKinds = []StepKindInfo{
	{StepCall, []string{"id", "call", "args", "continue_on_error"}, false},
	{StepDelay, []string{"id", "delay"}, true},
	{StepWait, []string{"id", "wait", "timeout", "continue_on_timeout"}, true},
	{StepIf, []string{"id", "if", "then", "else"}, false},
	{StepChoose, []string{"id", "choose", "default"}, false},
	{StepRepeat, []string{"id", "repeat", "do"}, false},
	{StepSet, []string{"id", "set"}, false},
	{StepStop, []string{"id", "stop", "error"}, false},
}

// TriggerKindInfo is one row of the closed trigger-kind table.
type TriggerKindInfo struct {
	Kind TriggerKind
	// Key is the member that selects the kind ("state" selects state and
	// numeric triggers: numeric when above or below is present).
	Key     string
	Members []string
	// Scheduled triggers fire on the clock (a cron schedule), the others
	// on state changes and events, or at sun events.
	Scheduled bool
}

// TriggerKinds is the closed set of trigger kinds, in the order the guide
// lists them; their keys, in this order, are the members the decoder
// tries.
var TriggerKinds = []TriggerKindInfo{
	{TriggerState, "state", []string{"id", "state", "to", "from", "not_to", "not_from", "for"}, false},
	{TriggerNumeric, "state", []string{"id", "state", "above", "below", "for"}, false},
	{TriggerEvent, "event", []string{"id", "event", "value"}, false},
	{TriggerCron, "cron", []string{"id", "cron"}, true},
	{TriggerTime, "at", []string{"id", "at"}, true},
	{TriggerSun, "sun", []string{"id", "sun", "offset"}, false},
	{TriggerAvailable, "available", []string{"id", "available", "to", "for"}, false},
}

// ConditionKindInfo is one row of the closed condition-kind table.
type ConditionKindInfo struct {
	Kind ConditionKind
	// Members are the members a condition of this kind may have; the
	// member named like the kind selects it.
	Members []string
	// Window lists the members of a time or sun condition's object.
	Window []string
}

// ConditionKinds is the closed set of condition kinds, in the order the
// decoder tries their keys and the guides list them (Home Assistant's
// template, time and sun conditions).
var ConditionKinds = []ConditionKindInfo{
	{CondExpr, []string{"id", "expr"}, nil},
	{CondTime, []string{"id", "time"}, []string{"after", "before", "weekday"}},
	{CondSun, []string{"id", "sun"}, []string{"after", "after_offset", "before", "before_offset"}},
}

// conditionKind returns the table row of k (ok false for a kind outside
// it).
func ConditionKindOf(k ConditionKind) (ConditionKindInfo, bool) {
	i := slices.IndexFunc(ConditionKinds, func(c ConditionKindInfo) bool { return c.Kind == k })
	if i < 0 {
		return ConditionKindInfo{}, false
	}
	return ConditionKinds[i], true
}

// stepKind returns the table row of k (ok false for a kind outside it).
func StepKindOf(k StepKind) (StepKindInfo, bool) {
	i := slices.IndexFunc(StepKinds, func(s StepKindInfo) bool { return s.Kind == k })
	if i < 0 {
		return StepKindInfo{}, false
	}
	return StepKinds[i], true
}

// triggerKind returns the table row of k (ok false for a kind outside it).
func TriggerKindOf(k TriggerKind) (TriggerKindInfo, bool) {
	i := slices.IndexFunc(TriggerKinds, func(t TriggerKindInfo) bool { return t.Kind == k })
	if i < 0 {
		return TriggerKindInfo{}, false
	}
	return TriggerKinds[i], true
}

// Tables the decoder derives from the two above.
var (
	StepKeys         = stepKindKeys()
	TriggerKeys      = triggerKindKeys()
	AllStepFields    = UnionOf(StepKinds, func(k StepKindInfo) []string { return k.Members })
	AllTriggerFields = UnionOf(TriggerKinds, func(k TriggerKindInfo) []string { return k.Members })
	FieldHomes       = memberHomes()
	ConditionKeys    = conditionKindKeys()
)

func conditionKindKeys() []string {
	keys := make([]string, len(ConditionKinds))
	for i, k := range ConditionKinds {
		keys[i] = string(k.Kind)
	}
	return keys
}

func stepKindKeys() []string {
	keys := make([]string, len(StepKinds))
	for i, k := range StepKinds {
		keys[i] = string(k.Kind)
	}
	return keys
}

func triggerKindKeys() []string {
	var keys []string
	for _, k := range TriggerKinds {
		if !slices.Contains(keys, k.Key) {
			keys = append(keys, k.Key)
		}
	}
	return keys
}

// unionOf lists the members of every row, each once, in table order.
func UnionOf[T any](rows []T, members func(T) []string) []string {
	var out []string
	for _, r := range rows {
		for _, f := range members(r) {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// memberHomes names, for each member a step or trigger kind defines, the
// kinds it belongs to (for hints on misplaced members).
func memberHomes() map[string]string {
	homes := map[string][]string{}
	addHome := func(f, home string) {
		if f != "id" && !slices.Contains(homes[f], home) {
			homes[f] = append(homes[f], home)
		}
	}
	for _, k := range StepKinds {
		for _, f := range k.Members {
			addHome(f, string(k.Kind)+" steps")
		}
	}
	for _, k := range TriggerKinds {
		for _, f := range k.Members {
			addHome(f, string(k.Kind)+" triggers")
		}
	}
	out := map[string]string{}
	for f, hs := range homes {
		out[f] = strings.Join(hs, " and ")
	}
	return out
}

// Child is one child step list of a step: an arm of an if or choose step
// (Label; When guards a choose arm), or the body of a repeat step (Loop).
type Child struct {
	Label string
	When  *Expr
	Loop  bool
	Steps []*Step
}

// Children walks s's child step lists in the order plans list them: then
// and else; the arms of a choose step, then its default; a loop body. Call
// and delay steps have none.
func (s *Step) Children() iter.Seq[Child] {
	return func(yield func(Child) bool) {
		switch s.Kind {
		case StepIf:
			_ = yield(Child{Label: LabelThen, Steps: s.Then}) && yield(Child{Label: LabelElse, Steps: s.Else})
		case StepChoose:
			for _, a := range s.Choose {
				if !yield(Child{Label: a.Label, When: a.When, Steps: a.Do}) {
					return
				}
			}
			yield(Child{Label: LabelDefault, Steps: s.Default})
		case StepRepeat:
			yield(Child{Loop: true, Steps: s.Do})
		}
	}
}

// walkSteps calls visit for every step of list and of their child lists,
// depth first in program order, until visit returns false.
func WalkSteps(list []*Step, visit func(*Step) bool) bool {
	for _, s := range list {
		if !visit(s) {
			return false
		}
		for ch := range s.Children() {
			if !WalkSteps(ch.Steps, visit) {
				return false
			}
		}
	}
	return true
}
