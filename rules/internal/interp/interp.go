package interp

// The run loop: Run, the trigger's entry, seq and step (which hands each
// step to the file named for it), the trace entries and what they cost.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// RunInput is everything a run starts from besides the program and World.
type RunInput struct {
	Trigger model.TriggerFire
	Params  map[string]any // bound program params (defaults are filled in)
	Limits  core.Limits    // zero fields take DefaultLimits
	// Throttle, when set, is asked once the conditions held: throttled
	// ends the run with status throttled instead of running the body
	// (until is when the window closes). It is the rule's throttle gate
	// (the engine's, or a test run's scenario.last_run).
	Throttle func(now time.Time) (until time.Time, throttled bool)
	// SkipConditions records every condition as skipped instead of
	// evaluating it (a manual "run now").
	SkipConditions bool
	// Cache lends the run its expression environments and VMs (nil: they
	// are made anew).
	Cache *model.Cache
	// AsyncTail lets the run end before its last call is acknowledged,
	// when the World is an AsyncCaller: a RunResult that is Pending then
	// waits for the caller's Finish.
	AsyncTail bool
}

// RunResult is a finished (or ended) run. Steps is the full-detail trace;
// TraceAt derives the level a caller asked for.
type RunResult struct {
	Outcome pilotage.Outcome
	Steps   []pilotage.TraceStep
	// Output is the run's result value: {"vars": …} when variables were
	// set, "stop" with the reason when a stop step ended the run,
	// "condition" with the id of the condition that was false. nil when
	// there is nothing to report.
	Output         any
	Vars           map[string]any
	Calls          []CallRecord
	Started, Ended time.Time
	// Ops is how many operations the run's evaluations did (MaxRunOps).
	Ops int
	// Bytes is about what the run records: its trace's inputs, outputs
	// and decisions and its call records (MaxRunBytes).
	Bytes int

	tail tailCall // the last call, still waiting (see Pending)
}

// halt ends an activation: a step failed, a bound was hit, the run was
// cancelled or a stop step ran. nil means "carry on".
type halt struct {
	status string // a run status
	msg    string
}

func (h *halt) ok() bool {
	s, _ := core.LookupStatus(core.RunStatuses, h.status)
	return s.OK
}

// interp is one run in progress.
type interp struct {
	ctx      context.Context
	w        model.World
	lim      core.Limits
	cache    *model.Cache
	start    time.Time
	deadline time.Time
	steps    []pilotage.TraceStep
	calls    []CallRecord
	current  string // qualified id of the step being executed (panic reports)
	// parent is the entry the steps being run are nested in (an arm's
	// branch, a loop, a called automation): each new entry records it.
	parent string
	// tailAsync: the last top-level call may be acknowledged after Run
	// returns (RunInput.AsyncTail).
	tailAsync bool
	// tms backs the entries' TMs pointers: one array for many entries.
	// Entries point into it, so it is only ever appended to within its
	// capacity (a full one is replaced, not grown).
	tms []float64
	mem *runMem
	// setValues counts the JSON values set steps stored (Limits.MaxSetValues).
	setValues int
	// bytes counts what the run records (Limits.MaxRunBytes).
	bytes int
	// ops counts the operations of the run's evaluations (Limits.MaxRunOps).
	ops model.RunOps
	// throttle is the program's throttle once the gate was asked.
	throttle time.Duration
	// assumed lists the entries whose result a test run's scenario
	// forced (step status assumed).
	assumed []string
	// varBytes is what each variable of the top frame counts in bytes
	// (the run's output holds them as they are at its end).
	varBytes map[string]int
}

// frame is one activation of a program body: the run itself, or an
// expanded promoted automation (prefix "call#1/").
type frame struct {
	c      *model.Compiled
	env    *model.Env
	prefix string
	depth  int
}

// Run executes a compiled program against w: the trigger entry, the
// conditions in order, then the body. It never panics and never returns
// nil; the outcome is authoritative and Steps is the trace so far.
//
// The trace starts with the "triggers" branch entry (took = trigger id)
// and the trigger's entry (output = its value), then one entry per
// condition (output true/false), then the body in execution order with
// flat identities (spec §5.8.2). Run statuses: success; conditions_not_met
// (ok, a condition was false); stopped (ok, a stop step); failed (a call
// was refused, an expression failed, stop with error, a panic);
// not_connected (a call's error wraps ErrNotConnected); not_acknowledged
// (it wraps ErrNotAcknowledged); timeout (a wait
// timed out without continue_on_timeout, the MaxWall bound on the World
// clock, or ctx's deadline); limit_exceeded (MaxSteps entries,
// MaxIterations per loop activation, MaxCallDepth, expression memory,
// MaxValueBytes and MaxEvalBytes for what an evaluation builds,
// MaxRunBytes for what the run records, MaxSetValues and MaxValueDepth
// for values set steps store, MaxEvalOps for an evaluation's operations,
// MaxRunOps for the operations of all its evaluations together);
// cancelled (ctx cancelled; the engine reports shutdowns as interrupted).
// A branch or loop entry's outcome is that of its activation: success, or
// the status of the step that ended it.
func Run(ctx context.Context, c *model.Compiled, w model.World, in RunInput) (res *RunResult) {
	lim := in.Limits.WithDefaults()
	start := w.Now()
	// The trigger branch, its trigger, the conditions and the top-level
	// steps: room for them made at once instead of a doubling series, in
	// the run's own allocation when they are few.
	n := 0
	if c != nil {
		n = min(2+len(c.Conds)+len(c.Steps), 64)
	}
	var m *runMem
	var steps []pilotage.TraceStep
	var tms []float64
	if n <= smallRun {
		sm := &smallRunMem{}
		m, steps, tms = &sm.runMem, sm.steps[:0], sm.tms[:0]
	} else {
		m, steps, tms = &runMem{}, make([]pilotage.TraceStep, 0, n), make([]float64, 0, n)
	}
	r := &m.r
	*r = interp{ctx: ctx, w: w, lim: lim, cache: in.Cache, start: start, deadline: start.Add(lim.MaxWall), mem: m, steps: steps, tms: tms,
		tailAsync: in.AsyncTail}
	r.calls = m.firstRec[:0]
	res = &m.res
	res.Started = start
	var top *frame
	defer func() {
		if p := recover(); p != nil {
			h := &halt{core.StatusFailed, fmt.Sprintf("internal error at step %q: %v", r.current, p)}
			r.finishResult(res, top, h)
		}
		if top != nil {
			top.env.Release()
		}
	}()
	top, h := r.run(c, in)
	r.finishResult(res, top, h)
	return res
}

// runMem is what every run allocates, in one allocation: the result, the
// interpreter, the top frame and its environment, and room for the first
// call step's calls list and the trigger decision (trace entries point
// into it, so it lives as long as the result's trace).
type runMem struct {
	res       RunResult
	r         interp
	top       frame
	env       model.Env
	decision  [1]pilotage.Decision
	firstCall [1]string
	callUsed  bool
	firstRec  [1]CallRecord
}

// smallRun is how many top-level trace entries a run's own allocation has
// room for: a trigger, its branch and two steps or conditions.
const smallRun = 4

// smallRunMem is a runMem with its trace's first entries.
type smallRunMem struct {
	runMem
	steps [smallRun]pilotage.TraceStep
	tms   [smallRun]float64
}

func (r *interp) finishResult(res *RunResult, top *frame, h *halt) {
	if h != nil {
		r.failOpen(h)
	}
	res.Steps = r.steps
	res.Calls = r.calls
	res.Ops, res.Bytes = r.ops.Used, r.bytes
	res.Ended = r.safeNow()
	var out map[string]any // made only when there is something to report
	switch {
	case h == nil && len(r.assumed) > 0:
		res.Outcome = pilotage.Outcome{OK: true, Status: core.StatusAssumed,
			Error: "the body ran to its end, but these results were assumed by scenario.waits, not simulated: " + strings.Join(r.assumed, ", ")}
	case h == nil:
		res.Outcome = pilotage.Outcome{OK: true, Status: core.StatusSuccess}
	default:
		res.Outcome = pilotage.Outcome{OK: h.ok(), Status: h.status}
		if !h.ok() {
			res.Outcome.Error = h.msg
		}
		switch h.status {
		case core.StatusThrottled:
			res.Outcome.Error = "throttled: the body ran less than " + clock.HumanDuration(r.throttle) + " ago; it may run again at " + h.msg
		case core.StatusNotTriggered:
			res.Outcome.Error = "the trigger would not fire: " + h.msg
		}
		switch h.status {
		case core.StatusConditionsNotMet:
			out = map[string]any{"condition": h.msg}
		case core.StatusStopped:
			out = map[string]any{"stop": h.msg}
		case core.StatusThrottled:
			out = map[string]any{"throttled_until": h.msg}
		}
	}
	if top != nil && len(top.env.Vars) > 0 {
		res.Vars = top.env.Vars
		if out == nil {
			out = map[string]any{}
		}
		out["vars"] = jsonSafe(top.env.Vars)
	}
	if len(out) > 0 {
		res.Output = out
	}
}

func (r *interp) safeNow() (t time.Time) {
	defer func() {
		if recover() != nil {
			t = r.start
		}
	}()
	return r.w.Now()
}

// failOpen marks every entry still marked running (the one a panic or a
// halt interrupted) with the halt's status.
func (r *interp) failOpen(h *halt) {
	for i := range r.steps {
		if r.steps[i].Outcome.Status == "" {
			r.setOutcome(i, stepStatusFor(h.status), h.msg)
		}
	}
}

func (r *interp) run(c *model.Compiled, in RunInput) (*frame, *halt) {
	if c == nil {
		return nil, &halt{core.StatusFailed, "no program to run"}
	}
	env := &r.mem.env
	*env = model.Env{
		Params:   WithParamDefaults(c.ParamsSchema, in.Params),
		World:    r.w,
		Selected: c.ExprSels,
		Budget:   r.lim.MemoryBudget,
		Cache:    r.cache,

		ValueBytes: r.lim.MaxValueBytes,
		EvalBytes:  r.lim.MaxEvalBytes,
		EvalOps:    r.lim.MaxEvalOps,
		RunOps:     &r.ops,
		Ctx:        r.ctx,
	}
	r.ops = model.RunOps{Max: r.lim.MaxRunOps}
	f := &r.mem.top
	*f = frame{c: c, env: env}
	if h := r.triggers(f, in.Trigger); h != nil {
		return f, h
	}
	for i := range c.Conds {
		if h := r.condition(f, &c.Conds[i], in.SkipConditions); h != nil {
			return f, h
		}
	}
	if in.Throttle != nil && c.ThrottleFor > 0 {
		r.throttle = c.ThrottleFor
		if until, ok := in.Throttle(r.w.Now()); ok {
			return f, &halt{core.StatusThrottled, until.Format(time.RFC3339)}
		}
	}
	return f, r.seq(f, c.Steps, "")
}

// WithParamDefaults fills absent top-level params from the "default" of
// each property in the program's params schema. The caller's map is not
// modified.
func WithParamDefaults(schema json.RawMessage, params map[string]any) map[string]any {
	if len(params) == 0 && len(schema) == 0 {
		return nil // made when an expression reads params
	}
	out := make(map[string]any, len(params))
	for k, v := range params {
		out[k] = v
	}
	if len(schema) == 0 {
		return out
	}
	var s struct {
		Properties map[string]struct {
			Default json.RawMessage `json:"default"`
		} `json:"properties"`
	}
	if json.Unmarshal(schema, &s) != nil {
		return out
	}
	for k, p := range s.Properties {
		if _, ok := out[k]; ok || len(p.Default) == 0 {
			continue
		}
		var v any
		if json.Unmarshal(p.Default, &v) == nil {
			out[k] = v
		}
	}
	return out
}

// triggers records the trigger branch ("triggers" took <id>) and the
// trigger's own entry, and binds trigger.* for expressions.
func (r *interp) triggers(f *frame, fire model.TriggerFire) *halt {
	if len(f.c.RunTriggers) == 0 && fire.ID == "" {
		f.env.BindTrigger(nil, fire, r.fireTime(fire))
		return nil
	}
	t := f.c.Trigger(fire.ID)
	if t == nil {
		return &halt{core.StatusFailed, fmt.Sprintf("unknown trigger %q", fire.ID)}
	}
	f.env.BindTrigger(t, fire, r.fireTime(fire))
	i, h := r.begin(TriggersStepID)
	if h != nil {
		return h
	}
	because := fire.Because
	if because == "" {
		because = TriggerReason(t, fire)
	}
	r.chargeText(len(because) + len(t.TriggerID))
	r.mem.decision[0] = pilotage.Decision{At: TriggersStepID, Took: t.TriggerID, Because: because}
	r.steps[i].Decisions = r.mem.decision[:1:1]
	if fire.NotFired != "" { // a test run's trigger that would not fire now: the branch is not met either
		r.setOutcome(i, core.StepNotMet, fire.NotFired)
	} else {
		r.setOutcome(i, core.StepSuccess, "")
	}
	r.parent = TriggersStepID // the trigger's entry is the branch's arm, as in the plan
	j, h := r.begin(t.TriggerID)
	r.parent = ""
	if h != nil {
		return h
	}
	if h := r.record(t.TriggerID, "the trigger value", fire.Value); h != nil {
		return r.fail(j, h)
	}
	if fire.Detail != nil {
		if h := r.record(t.TriggerID, "the trigger's simulation", fire.Detail); h != nil {
			return r.fail(j, h)
		}
		r.steps[j].Input = fire.Detail
	}
	if fire.NotFired != "" {
		r.setOutcome(j, core.StepNotMet, fire.NotFired)
		return &halt{core.StatusNotTriggered, fire.NotFired}
	}
	r.steps[j].Output = jsonSafe(fire.Value)
	r.setOutcome(j, core.StepSuccess, "")
	return nil
}

// TriggersStepID is the id of the trigger branch in plans and traces: its
// arms are the trigger ids, and a run's decision names the one that fired.
const TriggersStepID = "triggers"

func (r *interp) fireTime(fire model.TriggerFire) time.Time {
	if fire.Time.IsZero() {
		return r.start
	}
	return fire.Time
}

// seq runs a list of steps; sfx is the loop qualification ("#2#1").
func (r *interp) seq(f *frame, list []model.RunStep, sfx string) *halt {
	for i := range list {
		if h := r.step(f, &list[i], sfx); h != nil {
			return h
		}
	}
	return nil
}

func (r *interp) step(f *frame, s *model.RunStep, sfx string) *halt {
	qid := f.prefix + s.ID + sfx
	i, h := r.begin(qid)
	if h != nil {
		return h
	}
	switch s.Kind() {
	case model.StepCall:
		return r.call(f, s, qid, i)
	case model.StepDelay:
		return r.delay(f, s, qid, i)
	case model.StepWait:
		return r.wait(f, s, qid, i)
	case model.StepIf, model.StepChoose:
		return r.branch(f, s, qid, sfx, i)
	case model.StepRepeat:
		return r.repeat(f, s, qid, sfx, i)
	case model.StepSet:
		return r.set(f, s, qid, i)
	case model.StepStop:
		return r.stop(f, s, qid, i)
	}
	return r.fail(i, &halt{core.StatusFailed, fmt.Sprintf("step %q: unknown step kind %q", qid, s.Kind())})
}

// nested runs a list of steps whose entries are nested in the entry
// qid (a branch's arm, a loop's body, a called automation's body).
func (r *interp) nested(f *frame, qid string, list []model.RunStep, sfx string) *halt {
	outer := r.parent
	r.parent = qid
	h := r.seq(f, list, sfx)
	r.parent = outer
	return h
}

// begin appends the entry for qid, after checking cancellation and the
// run's bounds. The entry's outcome stays empty until setOutcome.
func (r *interp) begin(qid string) (int, *halt) {
	r.current = qid
	if r.ctx.Err() != nil {
		return -1, r.ctxHalt("before", qid)
	}
	now := r.w.Now()
	if now.After(r.deadline) {
		return -1, r.wallHalt(qid)
	}
	if len(r.steps) >= r.lim.MaxSteps {
		return -1, &halt{core.StatusLimitExceeded, fmt.Sprintf("step limit of %d trace entries reached before step %q", r.lim.MaxSteps, qid)}
	}
	if r.chargeText(len(qid) + parentBytes(r.parent) + entryOverhead); r.bytes > r.lim.MaxRunBytes {
		return -1, r.runBytesHalt(qid, "this entry")
	}
	if len(r.tms) == cap(r.tms) {
		r.tms = make([]float64, 0, min(max(2*cap(r.tms), 4), 64))
	}
	r.tms = append(r.tms, float64(now.Sub(r.start))/float64(time.Millisecond))
	r.steps = append(r.steps, pilotage.TraceStep{ID: qid, Parent: r.parent, TMs: &r.tms[len(r.tms)-1]})
	return len(r.steps) - 1, nil
}

func (r *interp) setOutcome(i int, status, msg string) {
	s, _ := core.LookupStatus(core.StepStatuses, status)
	r.steps[i].Outcome = pilotage.Outcome{OK: s.OK, Status: status, Error: msg}
}

// fail marks entry i with h's status and returns h.
func (r *interp) fail(i int, h *halt) *halt {
	msg := ""
	if !h.ok() {
		msg = h.msg
	}
	r.setOutcome(i, stepStatusFor(h.status), msg)
	return h
}

// stepStatusFor maps a run status to the step status that reports it.
func stepStatusFor(runStatus string) string {
	switch runStatus {
	case core.StatusStopped:
		return core.StepStopped
	case core.StatusConditionsNotMet:
		return core.StepNotMet
	case core.StatusSuccess:
		return core.StepSuccess
	}
	if _, ok := core.LookupStatus(core.StepStatuses, runStatus); ok {
		return runStatus
	}
	return core.StepFailed
}

// ctxHalt reports the end of the run's context: cancelled (mode restart, a
// disabled rule, shutdown), or timeout when the engine's deadline passed.
func (r *interp) ctxHalt(where, qid string) *halt {
	why := ""
	if c := context.Cause(r.ctx); c != nil && c != r.ctx.Err() {
		why = ": " + c.Error()
	}
	if errors.Is(r.ctx.Err(), context.DeadlineExceeded) {
		return &halt{core.StatusTimeout, fmt.Sprintf("run deadline passed %s step %q%s", where, qid, why)}
	}
	return &halt{core.StatusCancelled, fmt.Sprintf("cancelled %s step %q%s", where, qid, why)}
}

func (r *interp) wallHalt(qid string) *halt {
	return &halt{core.StatusTimeout, fmt.Sprintf("run exceeded its wall-time bound of %s at step %q", r.lim.MaxWall, qid)}
}

// exprHalt turns an evaluation error into a short failure naming the step.
// expr errors carry a multi-line source snippet; only the first line is
// kept.
func exprHalt(qid string, err error) *halt {
	msg := err.Error()
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	status := core.StatusFailed
	var le *model.LimitError
	switch {
	case errors.Is(err, context.Canceled):
		status = core.StatusCancelled
	case errors.Is(err, context.DeadlineExceeded):
		status = core.StatusTimeout
	case errors.As(err, &le) || strings.Contains(msg, "memory budget exceeded"):
		status = core.StatusLimitExceeded
	}
	return &halt{status, fmt.Sprintf("step %q: %s", qid, msg)}
}

// entryOverhead is what a trace entry costs in a stored run besides its
// id, input, output and decisions: the outcome, the time, the JSON keys.
const entryOverhead = 64

// parentBytes is what an entry's parent costs: `,"parent":"<id>"`.
func parentBytes(parent string) int {
	if parent == "" {
		return 0
	}
	return len(parent) + len(`,"parent":""`)
}

// record charges what the run keeps of v (a trace entry's input or output,
// a call record's args or output) against MaxRunBytes: the stored envelope
// of a run is the trace and the outputs, so a loop that makes a 400 kB
// value 200 times must end before it has stored 80 MB.
func (r *interp) record(qid, what string, v any) *halt { return r.recordf(qid, v, what, "") }

// recordf is record with what made from a format and its argument only
// when it is needed (a halt's message).
func (r *interp) recordf(qid string, v any, format, arg string) *halt {
	rest := r.lim.MaxRunBytes - r.bytes
	s := core.Measure(v, rest, false)
	r.bytes += s.Bytes
	if !s.Over(rest) {
		return nil
	}
	what := format
	if arg != "" {
		what = fmt.Sprintf(format, arg)
	}
	if s.Deep {
		return &halt{core.StatusLimitExceeded, fmt.Sprintf("step %q: %s is nested more than %d levels deep", qid, what, core.MaxMeasureDepth)}
	}
	return r.runBytesHalt(qid, what)
}

func (r *interp) runBytesHalt(qid, what string) *halt {
	return &halt{core.StatusLimitExceeded, fmt.Sprintf("step %q: %s would bring what this run records (trace and outputs) past %d bytes (MaxRunBytes)", qid, what, r.lim.MaxRunBytes)}
}

// chargeText charges a fixed part of the trace (an entry's id, a
// decision's reason); the next entry's begin reports going past the limit.
func (r *interp) chargeText(n int) { r.bytes += n }
