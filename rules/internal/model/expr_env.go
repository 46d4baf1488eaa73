package model

// The environment an evaluation runs against: the run's maps, bound into
// a pooled expression environment only as far as an expression reads them.

import (
	"context"
	"time"

	"github.com/pilothouse/pilothouse/rules/internal/core"
)

// Env is what an evaluation sees: the closed environment of automation/1.
// Set Trigger, Params, Vars and Steps before the first evaluation: from
// then on the run only makes the ones still missing, never replaces one.
type Env struct {
	Trigger map[string]any // id, kind, entity, value, from, to, time
	Params  map[string]any
	Vars    map[string]any
	Steps   map[string]any // step id → {"output": v}
	World   World
	// Selected is what the program's selector objects resolved to when
	// validated, by Selector.Key (Compiled.ExprSels): a World that does
	// not resolve selectors itself reads those.
	Selected map[string][]string
	Budget   uint // expr memory budget (0 = DefaultLimits.MemoryBudget)
	// Byte budgets of one evaluation (0 = DefaultLimits'): the largest
	// value it may build or return, and all it may build together; and
	// the operations it may do.
	ValueBytes, EvalBytes, EvalOps int
	// RunOps is the run's operation budget, which every evaluation of the
	// run draws on (nil: only EvalOps bounds an evaluation).
	RunOps *RunOps

	// Ctx is the run's context: an evaluation stops when it ends.
	Ctx context.Context
	// mem is the running evaluation's budget (the environment's memVar).
	mem evalMem

	Cache *Cache // lends holders and VMs (nil: made anew)
	// bound is the expression environment built from the fields above,
	// reused while the same maps are set (the maps themselves are live:
	// steps and vars fill in as the run goes). World must not change
	// once an expression has been evaluated.
	bound    map[string]any
	boundKey envKey
	// held is bound's holder; release returns it unless leaked ($env
	// was evaluated: the map may live on as a value).
	held   *envVars
	leaked bool

	// Step outputs are kept in pend until an expression that can read
	// steps is evaluated (most bodies never read them: no map per step).
	// From then on (stepsLive) they are written through, as the map may
	// be held by a value.
	pend      []stepOutput
	pendBuf   [1]stepOutput
	stepsLive bool
	trigSet   bool           // trig holds the run's trigger
	trig      triggerBinding // Trigger's content until it is built
}

type stepOutput struct {
	id  string
	out any
}

// SetStepOutput records steps.<id>.output.
func (e *Env) SetStepOutput(id string, out any) {
	if e.stepsLive {
		e.stepsMap()[id] = map[string]any{"output": out}
		return
	}
	if e.pend == nil {
		e.pend = e.pendBuf[:0]
	}
	e.pend = append(e.pend, stepOutput{id, out})
}

func (e *Env) stepsMap() map[string]any {
	if e.Steps == nil {
		e.Steps = map[string]any{}
	}
	return e.Steps
}

// flushSteps writes the pending step outputs into Steps, in order.
func (e *Env) flushSteps() {
	if len(e.pend) == 0 {
		return
	}
	m := e.stepsMap()
	for i, p := range e.pend {
		m[p.id] = map[string]any{"output": p.out}
		e.pend[i] = stepOutput{}
	}
	e.pend = e.pend[:0]
}

func (h *envVars) bind(e *Env) {
	h.m["trigger"] = e.Trigger
	h.m["params"] = e.Params
	h.m["vars"] = e.Vars
	h.m["steps"] = e.Steps
	h.m[memVar] = &e.mem
	h.sels = e.Selected
}

// Release hands the Env's expression environment back for reuse. The Env
// must not be evaluated again, and nothing may be evaluating it.
func (e *Env) Release() {
	h := e.held
	if h == nil {
		return
	}
	e.held, e.bound = nil, nil
	if e.leaked {
		return
	}
	h.m["trigger"], h.m["params"], h.m["vars"], h.m["steps"] = nil, nil, nil, nil
	h.m[memVar] = (*evalMem)(nil)
	h.w, h.sels = nil, nil
	e.Cache.putEnv(h)
}

// envKey records which of an Env's maps were set when its expression
// environment was bound. A map is only ever made where one was missing,
// never replaced (see Env), so the binding is stale exactly when the key
// has changed.
type envKey uint8

func (e *Env) key() envKey {
	var k envKey
	for i, m := range [...]map[string]any{e.Trigger, e.Params, e.Vars, e.Steps} {
		if m != nil {
			k |= 1 << i
		}
	}
	return k
}

// vars is the environment an expression that reaches f runs against. The
// maps f names are made when missing (the trigger's when first needed);
// the others may be nil: the expression cannot read them. The map is built
// once per Env and rebound when the maps change (an evaluation used to
// allocate a map and two closures).
func (e *Env) vars(f uint32) map[string]any {
	if f&reachSteps != 0 && !e.stepsLive {
		// From now on steps may be held by a value: write through.
		e.flushSteps()
		e.stepsLive = true
	}
	if f&reachTrigger != 0 {
		e.TriggerMap()
	}
	if f&reachParams != 0 && e.Params == nil {
		e.Params = map[string]any{}
	}
	if f&reachVars != 0 {
		e.VarsMap()
	}
	if f&reachSteps != 0 {
		e.stepsMap()
	}
	k := e.key()
	if e.bound != nil && k == e.boundKey {
		return e.bound
	}
	h := e.held
	if h == nil || e.leaked {
		// A leaked map keeps the maps it was built from (as a new map
		// did before holders were pooled).
		h = e.Cache.env()
		h.w = e.World
		e.held, e.leaked = h, false
	}
	h.bind(e)
	e.bound, e.boundKey = h.m, k
	if f&reachEnv != 0 {
		e.leaked = true
	}
	return e.bound
}

// VarsMap returns Vars, made when missing.
func (e *Env) VarsMap() map[string]any {
	if e.Vars == nil {
		e.Vars = map[string]any{}
	}
	return e.Vars
}

// TriggerMap returns Trigger, built from the run's trigger binding the
// first time it is needed (a body that never reads trigger never builds it).
func (e *Env) TriggerMap() map[string]any {
	if e.Trigger != nil {
		return e.Trigger
	}
	tb := &e.trig
	switch {
	case !e.trigSet:
		e.Trigger = map[string]any{}
	case tb.t == nil:
		e.Trigger = map[string]any{"id": "", "value": tb.fire.Value, "from": tb.fire.From, "time": tb.fire.Time}
	default:
		t := tb.t
		entity := t.EntityID
		if tb.fire.Entity != "" {
			entity = tb.fire.Entity
		}
		e.Trigger = map[string]any{
			"id": t.TriggerID, "kind": triggerKindValues[t.kind], "entity": entity,
			"value": tb.fire.Value, "from": tb.fire.From, "to": tb.fire.Value, "time": tb.fire.Time,
		}
	}
	*tb, e.trigSet = triggerBinding{}, false
	return e.Trigger
}

// triggerBinding is what trigger.* is built from (see triggerMap).
type triggerBinding struct {
	t    *RunTrigger // nil: a program without triggers
	fire TriggerFire // Time is the fire time the run uses
}

// BindTrigger sets what trigger.* will be built from; at is the fire time.
func (e *Env) BindTrigger(t *RunTrigger, fire TriggerFire, at time.Time) {
	fire.Time = at
	e.trig, e.trigSet, e.Trigger = triggerBinding{t: t, fire: fire}, true, nil
}

// triggerKindValues are the trigger kinds as interface values, by their
// index in TriggerKinds: boxed once, not on every run.
var triggerKindValues = func() []any {
	out := make([]any, len(TriggerKinds)+1)
	for i, k := range TriggerKinds {
		out[i] = string(k.Kind)
	}
	out[len(TriggerKinds)] = "" // a kind outside the table
	return out
}()

func (e *Env) valueBytes() int {
	if e.ValueBytes <= 0 {
		return core.DefaultLimits.MaxValueBytes
	}
	return e.ValueBytes
}

func (e *Env) evalBytes() int {
	if e.EvalBytes <= 0 {
		return core.DefaultLimits.MaxEvalBytes
	}
	return e.EvalBytes
}

func (e *Env) evalOps() int {
	if e.EvalOps <= 0 {
		return core.DefaultLimits.MaxEvalOps
	}
	return e.EvalOps
}

// beginEval starts an evaluation's budget: an expression's, or a
// template's with all the expressions inside it.
func (e *Env) beginEval() {
	// The run's Done channel is asked for on the first tick: an
	// evaluation without loops never looks at it, and a firing makes one
	// (and its deadline timer) only when asked.
	e.mem = evalMem{value: e.valueBytes(), total: e.evalBytes(), maxOps: e.evalOps(), ctx: e.Ctx}
	if r := e.RunOps; r != nil && r.left() < e.mem.maxOps {
		e.mem.maxOps, e.mem.run = r.left(), r
	}
}

// endEval charges the evaluation's operations to its run.
func (e *Env) endEval() {
	if r := e.RunOps; r != nil {
		if e.mem.ops >= r.left() {
			r.Used = r.Max // spent (never counted past Max: no overflow)
		} else {
			r.Used += e.mem.ops
		}
	}
}

// RunOps is one run's operation budget (MaxRunOps), shared by all its
// evaluations: each gets at most what the run has left, so that a loop of
// evaluations each under MaxEvalOps cannot keep a core busy for minutes.
type RunOps struct {
	Used int // operations the run's finished evaluations did
	Max  int // MaxRunOps
}

func (r *RunOps) left() int { return max(r.Max-r.Used, 0) }

func (e *Env) budget() uint {
	if e.Budget == 0 {
		return core.DefaultLimits.MemoryBudget
	}
	return e.Budget
}
