package rules

import (
	"fmt"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"
	"github.com/expr-lang/expr/vm/runtime"
)

// Expr is one compiled expression. It is compiled once, when the program is
// validated, and evaluated many times; the hot path never parses.
type Expr struct {
	Src    string // the expression text (without {{ }})
	Ptr    string // JSON Pointer of the string value that holds it
	Offset int    // rune offset of Src inside that string value
	Refs   []Ref  // catalog ids referenced through state('...')
	prog   *vm.Program

	// reach is what the compiled program can reach of its environment
	// (reach* bits), computed when the program is compiled: an Expr is
	// immutable once made (held programs share them).
	reach uint32
}

const (
	reachKnown   = 1 << iota
	reachEnv     // loads $env: the environment map itself can escape as a value
	reachTrigger // may read trigger
	reachParams  // may read params
	reachVars    // may read vars
	reachSteps   // may read steps
	reachAll     = reachEnv | reachTrigger | reachParams | reachVars | reachSteps
)

var reachNames = map[string]uint32{"trigger": reachTrigger, "params": reachParams, "vars": reachVars, "steps": reachSteps}

// reaches reports what x's program can read of the environment. A program
// names an environment variable by a constant (OpLoadFast "vars" on a map
// environment; a field path on a struct one), and the whole environment
// by OpLoadEnv ($env). Any constant with a variable's name counts, so a
// string literal of that text only costs the variable's binding.
func (x *Expr) reaches() uint32 {
	if x.reach != 0 {
		return x.reach
	}
	return reachOf(x.prog)
}

func reachOf(prog *vm.Program) uint32 {
	f := uint32(reachKnown)
	if prog == nil {
		f |= reachAll
	} else {
		for _, op := range prog.Bytecode {
			if op == vm.OpLoadEnv {
				f |= reachAll
			}
		}
		for _, c := range prog.Constants {
			switch c := c.(type) {
			case string:
				f |= reachNames[c]
			case *runtime.Field:
				for _, name := range c.Path {
					f |= reachNames[name]
				}
			}
		}
	}
	return f
}

// newExpr is the one way an Expr is made from a compiled program.
func newExpr(src string, prog *vm.Program) *Expr {
	return &Expr{Src: src, prog: prog, Refs: collectRefs(prog.Node()), reach: reachOf(prog)}
}

// Ref is one catalog id named inside an expression, with its rune offsets
// inside the expression source (for diagnostic ranges).
type Ref struct {
	ID       string
	From, To int
}

// Env is what an evaluation sees: the closed environment of automation/1.
// Set Trigger, Params, Vars and Steps before the first evaluation: from
// then on the run only makes the ones still missing, never replaces one.
type Env struct {
	Trigger map[string]any // id, kind, entity, value, from, to, time
	Params  map[string]any
	Vars    map[string]any
	Steps   map[string]any // step id → {"output": v}
	World   World
	Budget  uint // expr memory budget (0 = DefaultLimits.MemoryBudget)
	// Byte budgets of one evaluation (0 = DefaultLimits'): the largest
	// value it may build or return, and all it may build together.
	ValueBytes, EvalBytes int

	cache *Cache // lends holders and VMs (nil: made anew)
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

// setStepOutput records steps.<id>.output.
func (e *Env) setStepOutput(id string, out any) {
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

// envVars is a pooled expression environment: the map and the closures
// over the World it holds (built once per holder, not once per run).
type envVars struct {
	m   map[string]any
	w   World
	mem evalMem // the running evaluation's byte budget (m[memVar])
}

func newEnvVars() *envVars {
	h := &envVars{}
	h.m = map[string]any{
		"trigger": nil,
		"params":  nil,
		"vars":    nil,
		"steps":   nil,
		"state": func(id string) any {
			if h.w == nil {
				return nil
			}
			v, _ := h.w.State(id)
			return v
		},
		"now": func() time.Time {
			if h.w == nil {
				return time.Now()
			}
			return h.w.Now()
		},
		"hour":    hourOf,
		"minute":  minuteOf,
		"weekday": weekdayOf,
		"seconds": secondsOf,
		memVar:    &h.mem,
	}
	return h
}

func (h *envVars) bind(e *Env) {
	h.m["trigger"] = e.Trigger
	h.m["params"] = e.Params
	h.m["vars"] = e.Vars
	h.m["steps"] = e.Steps
}

// release hands the Env's expression environment back for reuse. The Env
// must not be evaluated again, and nothing may be evaluating it.
func (e *Env) release() {
	h := e.held
	if h == nil {
		return
	}
	e.held, e.bound = nil, nil
	if e.leaked {
		return
	}
	h.m["trigger"], h.m["params"], h.m["vars"], h.m["steps"] = nil, nil, nil, nil
	h.w = nil
	e.cache.putEnv(h)
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

// EnvFunctions names the functions of the closed environment, in the order
// the expressions guide lists them. compileEnv and (*Env).vars must agree.
var EnvFunctions = []struct{ Name, Signature, Doc string }{
	{"state", "state(id string) any", "current value of a state entry; id must be a string constant"},
	{"now", "now() time", "the world's clock (virtual in test runs)"},
	{"hour", "hour(t time) int", "hour of day 0-23 in the configured time zone"},
	{"minute", "minute(t time) int", "minute 0-59"},
	{"weekday", "weekday(t time) int", "day of week, 0 = Sunday … 6 = Saturday"},
	{"seconds", "seconds(d string) float", "a duration such as \"90s\" or \"2m\" in seconds"},
}

// EnvVariables names the variables of the closed environment.
var EnvVariables = []struct{ Name, Doc string }{
	{"trigger", "the trigger that fired: trigger.id, trigger.kind, trigger.entity, trigger.value, trigger.from, trigger.to, trigger.time"},
	{"params", "the program's parameters (execute input bound to params)"},
	{"vars", "variables assigned by set steps (scope rules apply)"},
	{"steps", "outputs of earlier steps: steps.<id>.output (scope rules apply)"},
}

func stateStub(string) any      { return nil }
func nowStub() time.Time        { return time.Time{} }
func hourOf(t time.Time) int    { return t.Hour() }
func minuteOf(t time.Time) int  { return t.Minute() }
func weekdayOf(t time.Time) int { return int(t.Weekday()) }

// compileEnv is the typing environment expressions are checked against.
var compileEnv = map[string]any{
	"trigger": map[string]any{},
	"params":  map[string]any{},
	"vars":    map[string]any{},
	"steps":   map[string]any{},
	"state":   stateStub,
	"now":     nowStub,
	"hour":    hourOf,
	"minute":  minuteOf,
	"weekday": weekdayOf,
	"seconds": secondsOf,
	memVar:    (*evalMem)(nil),
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
		e.triggerMap()
	}
	if f&reachParams != 0 && e.Params == nil {
		e.Params = map[string]any{}
	}
	if f&reachVars != 0 {
		e.varsMap()
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
		h = e.cache.env()
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

// varsMap returns Vars, made when missing.
func (e *Env) varsMap() map[string]any {
	if e.Vars == nil {
		e.Vars = map[string]any{}
	}
	return e.Vars
}

// triggerMap returns Trigger, built from the run's trigger binding the
// first time it is needed (a body that never reads trigger never builds it).
func (e *Env) triggerMap() map[string]any {
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
		e.Trigger = map[string]any{
			"id": t.id, "kind": triggerKindValues[t.kind], "entity": t.entity,
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

// bindTrigger sets what trigger.* will be built from; at is the fire time.
func (e *Env) bindTrigger(t *RunTrigger, fire TriggerFire, at time.Time) {
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

// CompileExpr compiles src in the closed environment. maxNodes bounds the
// AST (0 = DefaultLimits.MaxExprNodes). The error, when not nil, is an
// *expr file.Error carrying the position inside src where possible.
func CompileExpr(src string, maxNodes uint) (*Expr, error) {
	if maxNodes == 0 {
		maxNodes = DefaultLimits.MaxExprNodes
	}
	p, err := expr.Compile(src, exprOptions(maxNodes)...)
	if err != nil {
		return nil, err
	}
	return newExpr(src, p), nil
}

// collectRefs finds every state('id') call. Non-constant arguments are
// reported by the validator (see NonConstantRefs).
func collectRefs(root ast.Node) []Ref {
	var refs []Ref
	ast.Find(root, func(n ast.Node) bool {
		c, ok := n.(*ast.CallNode)
		if !ok || len(c.Arguments) != 1 {
			return false
		}
		if id, ok := c.Callee.(*ast.IdentifierNode); !ok || id.Value != "state" {
			return false
		}
		if s, ok := c.Arguments[0].(*ast.StringNode); ok {
			loc := s.Location()
			refs = append(refs, Ref{ID: s.Value, From: loc.From, To: loc.To})
		}
		return false
	})
	return refs
}

// Node returns the expression's AST (for validation passes).
func (x *Expr) Node() ast.Node { return x.prog.Node() }

// Eval runs the expression against env.
func (x *Expr) Eval(env *Env) (any, error) {
	vars := env.vars(x.reaches())
	mem := &env.held.mem
	*mem = evalMem{value: env.valueBytes(), total: env.evalBytes()}
	v := env.cache.vm()
	v.MemoryBudget = env.budget()
	out, err := v.Run(x.prog, vars)
	env.cache.putVM(v)
	if err == nil {
		err = resultFits(out, mem.value)
	}
	if err != nil {
		return nil, fmt.Errorf("expression %q: %w", x.Src, err)
	}
	return out, nil
}

// EvalBool runs the expression and requires a boolean result.
func (x *Expr) EvalBool(env *Env) (bool, error) {
	v, err := x.Eval(env)
	if err != nil {
		return false, err
	}
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("expression %q: got %T, want bool", x.Src, v)
	}
	return b, nil
}

func (e *Env) valueBytes() int {
	if e.ValueBytes <= 0 {
		return DefaultLimits.MaxValueBytes
	}
	return e.ValueBytes
}

func (e *Env) evalBytes() int {
	if e.EvalBytes <= 0 {
		return DefaultLimits.MaxEvalBytes
	}
	return e.EvalBytes
}

func (e *Env) budget() uint {
	if e.Budget == 0 {
		return DefaultLimits.MemoryBudget
	}
	return e.Budget
}

// Template is a program value that may embed expressions: a whole-string
// "{{ expr }}" keeps the expression's type; mixed text interpolates to a
// string; objects and arrays are templates element-wise; anything else is a
// constant.
type Template struct {
	Ptr   string
	Const any // used when no expression is involved (IsConst)

	IsConst bool
	Whole   *Expr          // "{{ expr }}" alone
	Parts   []TemplatePart // mixed text
	Object  map[string]*Template
	Array   []*Template
}

// TemplatePart is literal text or an expression inside a mixed string.
type TemplatePart struct {
	Text string
	Expr *Expr
}

// Exprs lists every expression inside t (for validation passes).
func (t *Template) Exprs() []*Expr {
	if t == nil {
		return nil
	}
	var out []*Expr
	if t.Whole != nil {
		out = append(out, t.Whole)
	}
	for _, p := range t.Parts {
		if p.Expr != nil {
			out = append(out, p.Expr)
		}
	}
	for _, k := range sortedKeys(t.Object) {
		out = append(out, t.Object[k].Exprs()...)
	}
	for _, a := range t.Array {
		out = append(out, a.Exprs()...)
	}
	return out
}

// Eval computes the template's value.
func (t *Template) Eval(env *Env) (any, error) {
	switch {
	case t == nil:
		return nil, nil
	case t.IsConst:
		return t.Const, nil
	case t.Whole != nil:
		return t.Whole.Eval(env)
	case t.Parts != nil:
		return t.evalParts(env)
	case t.Object != nil:
		out := make(map[string]any, len(t.Object))
		for k, sub := range t.Object {
			v, err := sub.Eval(env)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case t.Array != nil:
		out := make([]any, len(t.Array))
		for i, sub := range t.Array {
			v, err := sub.Eval(env)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	return t.Const, nil
}

// evalParts interpolates mixed text, the result bounded like any value.
func (t *Template) evalParts(env *Env) (any, error) {
	var b strings.Builder
	limit := env.valueBytes()
	for _, p := range t.Parts {
		s := p.Text
		if p.Expr != nil {
			v, err := p.Expr.Eval(env)
			if err != nil {
				return nil, err
			}
			s = formatValue(v)
		}
		if n := b.Len() + len(s); n > limit {
			return nil, fmt.Errorf("text %q: %w", t.source(), &LimitError{What: "the interpolated text", Bytes: n, Limit: "MaxValueBytes", Max: limit})
		}
		b.WriteString(s)
	}
	return b.String(), nil
}

// source is the mixed text as written (for messages), shortened.
func (t *Template) source() string {
	var b strings.Builder
	for _, p := range t.Parts {
		if p.Expr != nil {
			b.WriteString("{{ " + p.Expr.Src + " }}")
		} else {
			b.WriteString(p.Text)
		}
		if b.Len() > 80 {
			return strings.ToValidUTF8(b.String()[:80], "") + "…"
		}
	}
	return b.String()
}

func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case time.Time:
		return x.Format(time.RFC3339)
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprintf("%d", int64(x))
		}
	}
	return fmt.Sprint(v)
}
