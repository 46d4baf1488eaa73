package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/input"
	"github.com/pilothouse/pilothouse/engine/internal/sched"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// testRun simulates the body with no side effect: a scratch copy of the
// caller-visible live state, a virtual clock, recorded (not published) calls.
func (e *Engine) testRun(ctx context.Context, p *Principal, runID string, c *rules.Compiled, params map[string]any, sc *rules.Scenario, req ExecuteRequest) (*ExecuteResponse, error) {
	var scen rules.Scenario
	if sc != nil {
		scen = *sc
	}
	v := e.cat.View(p)
	if d := rules.CheckScenarioIDs(c, scen, v.Get, e.rules); len(d) > 0 {
		return &ExecuteResponse{RunID: runID, Outcome: pilotage.Outcome{OK: false, Status: rules.StatusValidationError, Error: "the scenario names ids that are not in the catalog, or values they never report"},
			Diagnostics: d}, nil
	}
	w := e.simWorld(p, v, scen)
	e.addSubprograms(p, w, c, 0)
	tf, err := rules.FireFor(c, scen, w)
	if err != nil {
		return &ExecuteResponse{RunID: runID, Outcome: pilotage.Outcome{OK: false, Status: rules.StatusValidationError, Error: err.Error()},
			Diagnostics: []pilotage.Diagnostic{input.Diag("/scenario/trigger", err.Error())}}, nil
	}
	// The World's clock is virtual: MaxWall bounds the run's simulated
	// time, MaxTestRunWall its real time. The request's context ends it
	// too (an evaluation checks it as it goes).
	wall := e.cfg.Limits.MaxTestRunWall
	ctx, cancel := context.WithTimeoutCause(ctx, wall, fmt.Errorf("the test run took longer than %s of real time (MaxTestRunWall)", wall))
	defer cancel()
	res := rules.Run(ctx, c, w, rules.RunInput{Trigger: tf, Params: params, Limits: e.cfg.Limits, Cache: e.rules,
		Throttle: w.Throttle(c.Throttle())})
	resp := &ExecuteResponse{RunID: runID, Outcome: res.Outcome}
	if res.Outcome.OK {
		calls := res.Calls
		if calls == nil {
			calls = []rules.CallRecord{}
		}
		resp.Output = map[string]any{"calls": calls, "vars": orEmptyMap(res.Vars)}
	}
	resp.Trace = &pilotage.Trace{Level: pilotage.LevelFull, Steps: res.Steps, Stats: runStats(res)}
	return resp, nil
}

// simWorld is a test run's world: the live values p may see (through
// its catalog view v), the scenario over them, and the live calls' own
// argument checks and previews.
func (e *Engine) simWorld(p *Principal, v *view, scen rules.Scenario) *rules.SimWorld {
	base := func(id string) (any, bool) {
		if _, ok := v.Get(id); !ok || e.devs == nil {
			return nil, false
		}
		l, ok := e.devs.Live(id)
		if !ok {
			return nil, false
		}
		return sched.LiveValue(l), true
	}
	w := rules.NewSimWorld(base, e.Now(), scen, e.simEffects)
	w.SetAvailableBase(sched.NewWorld(e.deps, p, nil).Available)
	w.SetSelectBase(v.Select)
	if e.devs != nil {
		w.SetDeviceOf(e.devs.DeviceOf)
		w.SetPreview(func(ctx context.Context, id string, args map[string]any) (any, error) {
			return e.devs.Preview(ctx, id, args)
		})
		w.SetCallCheck(func(id string, args map[string]any) error { return sched.CallError(e.devs.CheckArgs(id, args)) })
	}
	if e.helpers != nil {
		w.SetStateEffects(func(id string, args map[string]any, now time.Time, state func(string) (any, bool)) (map[string]any, []rules.Later, bool, error) {
			changes, later, handled, err := e.helpers.Simulate(id, args, now, state)
			out := make([]rules.Later, len(later))
			for i, l := range later {
				out[i] = rules.Later(l)
			}
			return changes, out, handled, err
		})
	}
	w.SetPlace(e.place())
	w.SetChangedBase(func(id string) (time.Time, bool) { return e.lastChanged(p, id) })
	return w
}

func orEmptyMap(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

func runStats(res *rules.RunResult) map[string]any {
	return map[string]any{
		"steps":      len(res.Steps),
		"calls":      len(res.Calls),
		"elapsed_ms": float64(res.Ended.Sub(res.Started)) / float64(time.Millisecond),
	}
}

// simEffects predicts the state a command would produce, for test runs.
func (e *Engine) simEffects(actionID string, args map[string]any) map[string]any {
	if e.devs == nil {
		return nil
	}
	keys := e.devs.StateIDsForAction(actionID)
	if len(keys) == 0 {
		return nil
	}
	out := map[string]any{}
	for k, v := range args {
		if id, ok := keys[k]; ok {
			out[id] = v
		}
	}
	return out
}

// deploy installs the program as a rule: promote, persist in one
// transaction, arm (replacing a rule of the same name atomically). It is
// all or nothing: memory (the catalog entry, the held body, the armed
// rule) changes only after storage committed the program and the rule.
//
// The program is promoted as written (its entry declares the worst risk
// its catalog params admit); the rule runs b, the program bound to params.
func (e *Engine) deploy(ctx context.Context, p *Principal, runID string, c *rules.Compiled, b *bound, params map[string]any, req ExecuteRequest) (*ExecuteResponse, error) {
	t0 := e.Now()
	ms := func() *float64 { d := float64(e.Now().Sub(t0)) / float64(time.Millisecond); return &d }
	fail := func(status, msg, stepErr string, steps []pilotage.TraceStep) *ExecuteResponse {
		steps = append(steps, pilotage.TraceStep{ID: "install", Outcome: pilotage.Outcome{OK: false, Status: rules.StepFailed, Error: stepErr}, TMs: ms()})
		return &ExecuteResponse{RunID: runID, Outcome: pilotage.Outcome{OK: false, Status: status, Error: msg},
			Trace: &pilotage.Trace{Level: pilotage.LevelFull, Steps: steps}}
	}
	if !p.Deploy {
		return fail(rules.StatusDenied, "principal "+shown.Quote(p.Name)+" may not deploy rules", "deploy not allowed", nil), nil
	}
	// A rule of the same name is replaced only if this principal could
	// manage it (see it and deploy): a deployer with a narrow scope must
	// not overwrite a rule it cannot see.
	name := req.target(c)
	existing, getErr := e.store.GetRule(ctx, name)
	if getErr != nil && !errors.Is(getErr, storage.ErrNotFound) {
		e.log.Warn("deploy: reading the installed rule failed; nothing was installed", "rule", name, "err", getErr)
		return fail(rules.StatusPartial, "reading the installed rules failed; nothing was promoted or installed", getErr.Error(), nil), nil
	}
	replaced := getErr == nil
	if replaced && !e.visibleRule(p, existing) {
		return fail(rules.StatusDenied, "a rule named "+shown.Quote(name)+" is installed by another principal; choose another name", "name taken", nil), nil
	}
	pr := e.preparePromotion(p, c)
	steps := []pilotage.TraceStep{{ID: "promote", Input: map[string]any{"name": name}, Output: map[string]any{"program_ref": pr.prog.Ref, "risk": pr.prog.Risk},
		Outcome: pilotage.Outcome{OK: true, Status: rules.StepSuccess}, TMs: ms()}}
	if b.refs {
		steps = append(steps, pilotage.TraceStep{ID: "bind", Input: params, Output: map[string]any{"references": b.references(params), "max_risk": b.c.Plan.MaxRisk},
			Outcome: pilotage.Outcome{OK: true, Status: rules.StepSuccess}, TMs: ms()})
	}
	now := e.Now()
	paramsJSON, _ := json.Marshal(params)
	rule := storage.Rule{Name: name, Ref: pr.prog.Ref, Principal: p.Name, Enabled: true, Params: paramsJSON, Binding: b.binding(), InstalledAt: now, UpdatedAt: now}
	if resp, err := e.storeRule(ctx, p, pr.prog, rule, func(status, msg, stepErr string) *ExecuteResponse {
		return fail(status, msg, stepErr, steps)
	}); resp != nil || err != nil {
		return resp, err
	}
	armed := e.commitPromotion(pr)
	if b.refs {
		armed = heldBound(b.c, pr.prog.Ref)
	}
	steps = append(steps, pilotage.TraceStep{ID: "install", Output: map[string]any{"rule": rule.Name, "replaced": replaced},
		Outcome: pilotage.Outcome{OK: true, Status: rules.StepSuccess}, TMs: ms()})
	ar, cancelled := e.sched.Install(rule, armed, params, e.cat.View(p).DevGen()+1)
	info := ar.Info()
	warnings := slices.Concat(b.warnings, replacedWarnings(replaced, existing, paramsJSON, cancelled))
	out := &pilotage.DeployOutput{ProgramRef: pr.prog.Ref, Rule: rule.Name, Replaced: replaced, Triggers: info.Triggers, NextFire: info.NextFire,
		TimeZone: sched.ZoneText(e.cfg.TimeZone), Warnings: warnings}
	if b.refs {
		out.Plan = b.c.Plan
	}
	steps = append(steps, pilotage.TraceStep{ID: "arm", Output: map[string]any{"triggers": info.Triggers, "next_fire": info.NextFire},
		Outcome: pilotage.Outcome{OK: true, Status: rules.StepSuccess}, TMs: ms()})
	e.notify(Event{Type: "rule", Rule: rule.Name, RunID: runID, Status: "installed", OK: true, Time: e.Now(), Principal: rule.Principal, Ref: rule.Ref})
	return &ExecuteResponse{RunID: runID, Outcome: pilotage.Outcome{OK: true, Status: rules.StatusSuccess}, Output: out,
		Trace: &pilotage.Trace{Level: pilotage.LevelFull, Steps: steps}}, nil
}

// addSubprograms gives a simulated world the promoted bodies a program
// calls, transitively (bounded by the call-depth limit).
func (e *Engine) addSubprograms(p *Principal, w *rules.SimWorld, c *rules.Compiled, depth int) {
	if depth > e.cfg.Limits.MaxCallDepth {
		return
	}
	for _, id := range c.Refs {
		if sub, ok := e.automationBody(p, id); ok {
			w.SetAutomation(id, sub)
			e.addSubprograms(p, w, sub, depth+1)
		}
	}
}

// replacedWarnings tells the deployer what replacing old undid: a copy of
// a reusable program bound to another input (deploying it again under the
// same name replaces that copy), and runs in progress, cancelled.
func replacedWarnings(replaced bool, old storage.Rule, params json.RawMessage, cancelled int) []pilotage.Diagnostic {
	var out []pilotage.Diagnostic
	if !replaced {
		return nil
	}
	oldIn, newIn := string(old.Params), string(params)
	if oldIn == "" || oldIn == "null" {
		oldIn = "{}"
	}
	if newIn == "" || newIn == "null" {
		newIn = "{}"
	}
	if oldIn != newIn {
		out = append(out, pilotage.Diagnostic{Code: rules.CodeReplacedRule, Severity: pilotage.SeverityWarning, Path: "",
			Message: "this deploy replaced the installed rule " + shown.Quote(old.Name) + ", which ran with input " + oldIn + "; it now runs with " + newIn,
			Hint:    "to keep both, deploy the program again with input.install.rule set to another name"})
	}
	if cancelled > 0 {
		out = append(out, pilotage.Diagnostic{Code: rules.CodeReplacedRule, Severity: pilotage.SeverityWarning, Path: "",
			Message: rules.Plural(cancelled, "run", "") + " of the replaced rule " + shown.Quote(old.Name) + " in progress cancelled: the steps not reached yet (such as turning a light back off) will not run",
			Hint:    "check the devices those runs control (pilotage_trace of the cancelled run shows how far it got)"})
	}
	return out
}

// storeRule installs rule over prog; what storage refuses is the deploy's
// answer, nothing installed: past p's rule cap (a request error), a name a
// person cannot tell from a rule installed meanwhile, a failed write.
func (e *Engine) storeRule(ctx context.Context, p *Principal, prog storage.Program, rule storage.Rule, fail func(status, msg, stepErr string) *ExecuteResponse) (*ExecuteResponse, error) {
	err := e.store.InstallRuleCapped(ctx, prog, rule, e.ruleCap(p))
	if err == nil {
		return nil, nil
	}
	if errors.As(err, new(*storage.RuleCapError)) {
		return nil, e.ruleCapError(p, err)
	}
	if msg, ok := lookAlikeInstalled(err, rule.Name); ok {
		return fail(rules.StatusDenied, msg, "name taken"), nil
	}
	e.log.Warn("deploy: storing the program and the rule failed; nothing was installed", "rule", rule.Name, "err", err)
	return fail(rules.StatusPartial, "storing the program and the rule failed; nothing was promoted or installed", err.Error()), nil
}
