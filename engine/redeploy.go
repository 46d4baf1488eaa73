package engine

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/pilothouse/pilothouse/engine/internal/promoted"
	"github.com/pilothouse/pilothouse/engine/internal/sched"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// unchangedDeploy answers a deploy identical to the installed rule of its
// name (same program_ref, same params, same owner, enabled and armed):
// nothing is installed again, so no run in progress is cancelled (a
// "turn off in 2 minutes" keeps its promise) and no approval is needed.
// nil: the deploy changes something.
func (e *Engine) unchangedDeploy(ctx context.Context, p *Principal, runID, name string, c *rules.Compiled, b *bound, params map[string]any) *ExecuteResponse {
	old, err := e.store.GetRule(ctx, name)
	if err != nil || !old.Enabled || old.Broken != "" || old.Principal != p.Name || old.Ref != promoted.Ref(c) {
		return nil
	}
	pj, _ := json.Marshal(params)
	if !bytes.Equal(paramsKey(old.Params), paramsKey(pj)) {
		return nil
	}
	ar := e.sched.Rule(old.Name)
	if ar == nil {
		return nil
	}
	info := ar.Info()
	out := &pilotage.DeployOutput{ProgramRef: old.Ref, Rule: old.Name, Unchanged: true, Triggers: info.Triggers, NextFire: info.NextFire,
		TimeZone: sched.ZoneText(e.cfg.TimeZone), Warnings: b.warnings}
	if b.refs {
		out.Plan = b.c.Plan
	}
	step := pilotage.TraceStep{ID: "install", Output: map[string]any{"rule": old.Name, "unchanged": true,
		"because": "the installed rule already runs this program with this input: nothing was replaced or cancelled"},
		Outcome: pilotage.Outcome{OK: true, Status: rules.StepSuccess}}
	return &ExecuteResponse{RunID: runID, Outcome: pilotage.Outcome{OK: true, Status: rules.StatusSuccess}, Output: out,
		Trace: &pilotage.Trace{Level: pilotage.LevelFull, Steps: []pilotage.TraceStep{step}}}
}

// paramsKey is a rule's params in canonical form, none as {}.
func paramsKey(raw []byte) []byte {
	if s := string(bytes.TrimSpace(raw)); s == "" || s == "null" {
		return []byte("{}")
	}
	return pilotage.CanonicalJSON(raw)
}

// replaceNotice warns at validate, before a deploy, that deploying c
// replaces the installed rule of its name (a different program), and how
// many of its runs in progress that would cancel; nil when it does not.
func (e *Engine) replaceNotice(ctx context.Context, p *Principal, c *rules.Compiled) *pilotage.Diagnostic {
	if e.store == nil || c == nil {
		return nil
	}
	old, err := e.store.GetRule(ctx, c.Name())
	if err != nil || !e.visibleRule(p, old) || old.Ref == promoted.Ref(c) {
		return nil
	}
	msg := "a rule named " + shown.Quote(old.Name) + " is installed (by " + old.Principal + ", " + old.Ref + "): deploying this under its name would replace it"
	if ar := e.sched.Rule(old.Name); ar != nil {
		if n := ar.InProgress(); n > 0 {
			msg += "; its " + rules.Plural(n, "run", "") + " in progress now would be cancelled"
		}
	}
	return &pilotage.Diagnostic{Code: rules.CodeReplacedRule, Severity: pilotage.SeverityWarning, Path: "/name", Message: msg,
		Hint: "a deploy replaces it only with input.install.replace: true (otherwise it answers rule_exists and installs nothing); to keep both, deploy with input.install.rule set to another name"}
}

// replaceCheck refuses a deploy that would replace an installed rule of
// its target name running another program or input, unless the input
// asked for that (install.replace): the answer says beforehand what
// replacing it would undo. nil: no such rule, the same program and input
// (re-arming a disabled rule), a rule p may not manage (deploy refuses
// that), or replace asked for.
func (e *Engine) replaceCheck(ctx context.Context, p *Principal, runID, name string, c *rules.Compiled, params map[string]any, replace bool) (*ExecuteResponse, error) {
	if replace {
		return nil, nil
	}
	old, err := e.store.GetRule(ctx, name)
	if err != nil || !e.visibleRule(p, old) {
		return nil, nil // deploy reads it again and answers for it
	}
	pj, _ := json.Marshal(params)
	if old.Ref == promoted.Ref(c) && old.Principal == p.Name && bytes.Equal(paramsKey(old.Params), paramsKey(pj)) {
		return nil, nil
	}
	rep := &pilotage.Replaces{Rule: old.Name, ProgramRef: old.Ref, Principal: old.Principal, Input: paramsKey(old.Params), Enabled: old.Enabled}
	if ar := e.sched.Rule(old.Name); ar != nil {
		rep.RunsInProgress = ar.InProgress()
	}
	msg := "a rule named " + shown.Quote(name) + " is installed (program " + old.Ref + ", input " + string(rep.Input) + ", by " + old.Principal + ")"
	if rep.RunsInProgress > 0 {
		msg += "; replacing it would cancel its " + rules.Plural(rep.RunsInProgress, "run", "") + " in progress"
	}
	msg += ". Nothing was installed: send the same request with input.install.replace: true to replace it, or with input.install.rule set to another name to keep both"
	step := pilotage.TraceStep{ID: "install", Input: map[string]any{"rule": name, "program_ref": promoted.Ref(c)}, Output: map[string]any{"replaces": rep},
		Outcome: pilotage.Outcome{OK: false, Status: rules.StepFailed, Error: msg}}
	return &ExecuteResponse{RunID: runID, Outcome: pilotage.Outcome{OK: false, Status: rules.StatusRuleExists, Error: msg}, Replaces: rep,
		Trace: &pilotage.Trace{Level: pilotage.LevelFull, Steps: []pilotage.TraceStep{step}}}, nil
}
