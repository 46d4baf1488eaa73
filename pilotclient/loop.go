package pilotclient

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/pilothouse/pilothouse/pilotage"
)

// StatusCatalogDrift is the recoverable drift outcome (spec §7.5).
const StatusCatalogDrift = "catalog_drift"

// StatusApprovalPending: the server's own risk gate holds the deploy until
// a human approves it outside the model (ExecuteResult.Approval).
const StatusApprovalPending = "approval_pending"

// ErrNotApproved is returned when the Host risk gate did not obtain
// approval: nothing was executed.
var ErrNotApproved = errors.New("not approved: nothing was executed")

// GateRequest is what the Host risk gate (spec §7.3) decides on. Every
// description and risk label in it is an unverified claim of the server.
type GateRequest struct {
	Program json.RawMessage
	Plan    *Plan
	// Reasons why approval is needed; empty = no approval needed.
	Reasons []string
	// Attempt is 1, or 2 when re-gating after drift recovery.
	Attempt int
}

// Approver obtains approval outside the Model: a human, or an established
// Host policy. It must not be delegated to the Model.
type Approver func(ctx context.Context, g *GateRequest) (bool, error)

// RunOptions tune Run.
type RunOptions struct {
	// TestRun simulates instead of deploying. Test runs are declared free
	// of side effects (execute.test_run), so the gate approves them by
	// Host policy; the plan is still reported.
	TestRun bool
	// Input is execute's input (for a test run: {"scenario": {...}}).
	Input map[string]any
	// Approve is consulted when the gate requires approval; nil refuses.
	Approve Approver
	// OnValidate, if set, sees every validation (attempt 1, then 2 after drift).
	OnValidate func(v *ValidateResult, attempt int)
	// OnDrift, if set, is told about a catalog_drift and the entries looked up again.
	OnDrift func(r *ExecuteResult, refreshed []string)
	// BeforeExecute, if set, runs just before each execute request
	// (attempt 1 or 2). It is a seam for tests that force drift.
	BeforeExecute func(ctx context.Context, attempt int) error
	// OnApprovalPending, if set, is told that the server holds the deploy
	// for a human's approval; when it returns true (the host obtained the
	// approval outside the model) the same request is sent once more.
	OnApprovalPending func(ctx context.Context, r *ExecuteResult) (bool, error)
}

// RunResult is what one pass of the standard loop did.
type RunResult struct {
	// Validation is the last validation; when it is not valid, nothing ran.
	Validation *ValidateResult
	// Gate is the last gate decision's request (nil when no approval was needed).
	Gate *GateRequest
	// Execution is the last execute answer (nil when nothing ran).
	Execution *ExecuteResult
	// Attempts counts execute requests (at most 2: one retry after drift).
	Attempts int
}

// Run follows the standard Client loop (spec §7.1) for one Run: validate,
// stop on error diagnostics, gate on the plan's max_risk_hints, execute with
// the validated catalog_version and a fresh idempotency key, and on
// catalog_drift look the referenced entries up again, re-validate, re-gate
// and retry once. Invalid programs and failed outcomes are values in the
// result, not errors (spec §8).
func (c *Client) Run(ctx context.Context, program json.RawMessage, o RunOptions) (*RunResult, error) {
	if err := c.need("execute"); err != nil {
		return nil, err
	}
	res := &RunResult{}
	var approved *Plan
	for attempt := 1; attempt <= 2; attempt++ {
		v, err := c.Validate(ctx, program)
		if err != nil {
			return res, err
		}
		res.Validation = v
		if o.OnValidate != nil {
			o.OnValidate(v, attempt)
		}
		if !v.Valid || len(v.Errors()) > 0 {
			return res, nil
		}
		if !o.TestRun {
			if err := c.gate(ctx, res, program, v, attempt, &approved, o.Approve); err != nil {
				return res, err
			}
		}
		if o.BeforeExecute != nil {
			if err := o.BeforeExecute(ctx, attempt); err != nil {
				return res, err
			}
		}
		er, err := c.execute(ctx, ExecuteRequest{Program: program, Input: o.Input, TestRun: o.TestRun,
			TraceLevel: pilotage.LevelFull, ExpectedCatalogVersion: v.CatalogVersion, IdempotencyKey: NewKey()}, o)
		res.Attempts = attempt
		if err != nil {
			return res, err
		}
		res.Execution = er
		if er.Outcome.Status != StatusCatalogDrift || attempt == 2 {
			return res, nil
		}
		refreshed := c.refresh(ctx, v.Plan)
		if o.OnDrift != nil {
			o.OnDrift(er, refreshed)
		}
	}
	return res, nil
}

// execute sends req, and sends it once more when the server held it for
// an approval the host then obtained.
func (c *Client) execute(ctx context.Context, req ExecuteRequest, o RunOptions) (*ExecuteResult, error) {
	er, err := c.Execute(ctx, req)
	if err != nil || er.Outcome.Status != StatusApprovalPending || o.OnApprovalPending == nil {
		return er, err
	}
	retry, err := o.OnApprovalPending(ctx, er)
	if err != nil || !retry {
		return er, err
	}
	req.IdempotencyKey = NewKey()
	return c.Execute(ctx, req)
}

// gate applies the Host risk gate. An approval covers one plan: after drift
// recovery it stands only when the new plan is identical.
func (c *Client) gate(ctx context.Context, res *RunResult, program json.RawMessage, v *ValidateResult, attempt int, approved **Plan, approve Approver) error {
	reasons := GateReasons(v.Plan)
	if len(reasons) == 0 {
		res.Gate = nil
		return nil
	}
	g := &GateRequest{Program: program, Plan: v.Plan, Reasons: reasons, Attempt: attempt}
	res.Gate = g
	if *approved != nil && samePlan(*approved, v.Plan) {
		return nil
	}
	if approve == nil {
		return ErrNotApproved
	}
	ok, err := approve(ctx, g)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNotApproved
	}
	*approved = v.Plan
	return nil
}

func samePlan(a, b *Plan) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// refresh looks the plan's referenced entries up again (spec §7.5 step 1)
// and returns their ids; entries that vanished are left to re-validation.
func (c *Client) refresh(ctx context.Context, p *Plan) []string {
	if p == nil || !c.caps.Has("catalog") {
		return nil
	}
	seen := map[string]bool{}
	var ids []string
	for _, s := range p.Steps {
		for _, id := range s.Calls {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	for _, id := range ids {
		_, _ = c.Get(ctx, id) // not_found is fine: validation will say so
	}
	return ids
}

// GateReasons lists why a plan needs approval before execute (spec §7.3):
// destructive or openWorld in max_risk_hints, and — failing closed — a
// missing plan, missing or malformed hints, an unknown risk level, or a step
// riskier than the plan's maximum.
func GateReasons(p *Plan) []string {
	if p == nil {
		return []string{"the server returned no plan: every execution needs approval"}
	}
	var reasons []string
	var hints map[string]any
	if len(p.MaxRiskHints) == 0 || json.Unmarshal(p.MaxRiskHints, &hints) != nil || hints == nil {
		return []string{"the plan carries no max_risk_hints: treated as risky"}
	}
	for _, k := range []string{"readOnly", "destructive", "openWorld"} {
		b, ok := hints[k].(bool)
		switch {
		case !ok:
			reasons = append(reasons, fmt.Sprintf("max_risk_hints.%s is missing: treated as risky", k))
		case b && k == "destructive":
			reasons = append(reasons, "destructive: true (e.g. locks, garage doors, alarms)")
		case b && k == "openWorld":
			reasons = append(reasons, "openWorld: true (something leaves the house, e.g. notifications)")
		}
	}
	if !knownRisk(p.MaxRisk) {
		reasons = append(reasons, fmt.Sprintf("unknown max_risk %q: treated as risky", p.MaxRisk))
	}
	maxDestr, _ := hints["destructive"].(bool)
	maxOpen, _ := hints["openWorld"].(bool)
	for _, s := range p.Steps {
		switch {
		case !knownRisk(s.Risk):
			reasons = append(reasons, fmt.Sprintf("step %s has unknown risk %q: treated as risky", s.ID, s.Risk))
		case (s.RiskHints.Destructive && !maxDestr) || (s.RiskHints.OpenWorld && !maxOpen):
			reasons = append(reasons, fmt.Sprintf("step %s is labelled riskier (%s) than the plan's max_risk_hints: treated as risky", s.ID, s.Risk))
		}
	}
	return reasons
}

func knownRisk(r pilotage.Risk) bool {
	for _, l := range pilotage.RiskLevels {
		if l.Risk == r {
			return true
		}
	}
	return false
}

// Verify checks an execute answer the way the loop's verify step needs:
// the outcome is ok and the inline trace is present; a deploy names what
// it installed.
func Verify(r *ExecuteResult, testRun bool) error {
	if r == nil {
		return errors.New("nothing was executed")
	}
	if !r.Outcome.OK {
		msg := r.Outcome.Status
		if r.Outcome.Error != "" {
			msg += ": " + r.Outcome.Error
		}
		return fmt.Errorf("run %s failed: %s", r.RunID, msg)
	}
	if r.Trace == nil {
		return fmt.Errorf("run %s: the inline trace is missing, the result cannot be verified", r.RunID)
	}
	if !testRun {
		if _, ok := r.Deploy(); !ok {
			return fmt.Errorf("run %s: the deploy output names no program_ref", r.RunID)
		}
	}
	return nil
}

// NewKey returns a fresh random idempotency key.
func NewKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "pc-" + hex.EncodeToString(b[:])
}
