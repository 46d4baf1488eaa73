package engine

import (
	"context"
	"slices"
	"strings"

	"github.com/pilothouse/pilothouse/engine/internal/sched"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// runOnce is execute's third mode (ExecuteRequest.Once): the body runs a
// single time on the live house as the caller, now, instead of being
// installed, and is recorded as a run of kind "manual" with its trace:
// its first trigger fires (its conditions are evaluated as usual).
// The web UI's device controls run a one-call program this way, so the
// standard validation (scope, argument schemas), risk and trace apply.
//
// Acting on the house needs a principal that may deploy (one that may
// install rules may also act by hand); a plan that is destructive or
// leaves the house runs only when the caller confirmed that risk.
func (e *Engine) runOnce(ctx context.Context, p *Principal, runID string, c *rules.Compiled, params map[string]any, confirmed pilotage.Risk) *ExecuteResponse {
	refuse := func(status, msg string) *ExecuteResponse {
		return &ExecuteResponse{RunID: runID, Outcome: pilotage.Outcome{OK: false, Status: status, Error: msg},
			Trace: &pilotage.Trace{Level: pilotage.LevelFull, Steps: []pilotage.TraceStep{}}}
	}
	if !p.Deploy {
		return refuse(rules.StatusDenied, "principal "+shown.Quote(p.Name)+" may not act on the house (manual runs need deploy)")
	}
	plan := c.Plan
	if plan == nil {
		plan = rules.BuildPlan(c)
	}
	if msg := riskGate(plan, confirmed); msg != "" {
		return refuse(rules.StatusDenied, msg)
	}
	if msg := e.handGate(p, plan); msg != "" {
		return refuse(rules.StatusDenied, msg)
	}
	// The run outlives a caller that hangs up (a command half sent is
	// worse than one finished), within the wall-time bound.
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.Limits.MaxWall)
	defer cancel()
	// Held to its plan's risk, as a firing is: a riskier device that
	// joined a selector's area since it was validated is refused.
	w := sched.NewWorld(e.deps, p, &plan.MaxRiskHints)
	// A program has at least one trigger: the first one stands for the
	// caller's hand (nothing is armed).
	tf := rules.TriggerFire{ID: c.Triggers()[0].ID(), Time: e.Now().In(e.cfg.TimeZone), Because: "manual run by " + p.Name}
	res := rules.Run(runCtx, c, w, rules.RunInput{Trigger: tf, Params: params, Limits: e.cfg.Limits, Cache: e.rules})
	resp := &ExecuteResponse{RunID: runID, Outcome: res.Outcome,
		Trace: &pilotage.Trace{Level: pilotage.LevelFull, Steps: res.Steps, Stats: runStats(res)}}
	if res.Outcome.OK {
		calls := res.Calls
		if calls == nil {
			calls = []rules.CallRecord{}
		}
		resp.Output = map[string]any{"calls": calls, "vars": orEmptyMap(res.Vars)}
	}
	return resp
}

// handGate refuses a manual run the principal's risk-gate policy would
// send to a person for approval, unless the principal is such a person:
// an assistant logged in to the web UI with its own token confirms its
// own controls, so the confirmation is no human's (spec §7.3).
func (e *Engine) handGate(p *Principal, plan *pilotage.Plan) string {
	reasons := e.approvals.NeedsPerson(p, plan, "")
	if len(reasons) == 0 {
		return ""
	}
	return "principal " + shown.Quote(p.Name) + " may not send this by hand: its risky actions need a person's approval (" +
		strings.Join(reasons, ", ") + "), and it may not approve its own; a person who may approve (the owner) sends it, or a rule deployed by " +
		shown.Quote(p.Name) + " asks for that approval"
}

// riskGate refuses a plan that is destructive or leaves the house unless
// the confirmed risk covers it; "" lets it run.
func riskGate(plan *pilotage.Plan, confirmed pilotage.Risk) string {
	if plan == nil {
		return ""
	}
	need := plan.MaxRiskHints
	if !need.Destructive && !need.OpenWorld {
		return ""
	}
	known := slices.ContainsFunc(pilotage.RiskLevels, func(l pilotage.RiskLevel) bool { return l.Risk == confirmed })
	got := pilotage.HintsOf(confirmed)
	if !known || need.Destructive && !got.Destructive || need.OpenWorld && !got.OpenWorld {
		return "this program's risk is " + string(plan.MaxRisk) + ": it runs only once that risk is confirmed"
	}
	return ""
}
