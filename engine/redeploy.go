package engine

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// unchangedDeploy answers a deploy identical to the installed rule of its
// name (same program_ref, same params, same owner, enabled and armed):
// nothing is installed again, so no run in progress is cancelled (a
// "turn off in 2 minutes" keeps its promise) and no approval is needed.
// nil: the deploy changes something.
func (e *Engine) unchangedDeploy(ctx context.Context, p *Principal, runID string, c *rules.Compiled, b *bound, params map[string]any) *ExecuteResponse {
	old, err := e.store.GetRule(ctx, c.Name())
	if err != nil || !old.Enabled || old.Broken != "" || old.Principal != p.Name || old.Ref != programRef(c) {
		return nil
	}
	pj, _ := json.Marshal(params)
	if !bytes.Equal(paramsKey(old.Params), paramsKey(pj)) {
		return nil
	}
	ar := e.sched.ruleByName(old.Name)
	if ar == nil {
		return nil
	}
	info := ar.info(e)
	out := &pilotage.DeployOutput{ProgramRef: old.Ref, Rule: old.Name, Unchanged: true, Triggers: info.Triggers, NextFire: info.NextFire,
		TimeZone: zoneText(e.cfg.TimeZone), Warnings: b.warnings}
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
	return canonicalJSON(raw)
}
