package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// The Host risk gate (spec §7.3), enforced by the server itself: most MCP
// hosts know nothing of max_risk_hints, so a deploy whose bound plan is
// destructive or leaves the house (by default; a principal's policy says
// which) is installed only with a human's approval obtained outside the
// model. Such a deploy installs nothing and answers approval_pending with
// an approval request (id, the web page where a human decides, expiry);
// a human approves it on the web page, with `pilothouse approve ID`, or
// (when the client supports it) through MCP elicitation; the assistant's
// retry of the same request then installs it. The approval binds to the
// program's ref (its content and baseline), the bound params, the rule
// name and the requesting principal: any other deploy needs its own. It is
// used once and expires.

// DefaultApprovalTTL is how long a request waits for a human, and an
// approval for the retry that uses it.
const DefaultApprovalTTL = 15 * time.Minute

// maxOpenApprovals bounds one principal's pending requests: a caller that
// keeps deploying new risky programs cannot flood the approvers' list.
const maxOpenApprovals = 20

// policyOf is p's risk-gate policy.
func (e *Engine) policyOf(p *Principal) *ApprovalPolicy {
	if p.Approval != nil {
		return p.Approval
	}
	return &e.cfg.Approval
}

// approvalKey binds an approval to exactly one deploy.
func approvalKey(ref string, params []byte, rule, principal string) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(ref), canonicalJSON(params), []byte(rule), []byte(principal)} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// gateRequest is a deploy at the risk gate.
type gateRequest struct {
	p       *Principal
	runID   string
	rule    string
	c, b    *rules.Compiled // as written, and bound (what runs)
	params  []byte
	reasons []string
}

// gate applies the risk gate to a deploy. It returns the approval the
// deploy uses (nil: none needed), or the response that refuses it.
func (e *Engine) gate(ctx context.Context, p *Principal, runID, rule string, c *rules.Compiled, b *bound, params map[string]any) (*storage.Approval, *ExecuteResponse, error) {
	plan := b.c.Plan
	if plan == nil {
		plan = rules.BuildPlan(b.c)
	}
	g := gateRequest{p: p, runID: runID, rule: rule, c: c, b: b.c, reasons: e.policyOf(p).Reasons(plan)}
	if len(g.reasons) == 0 {
		return nil, nil, nil
	}
	g.params, _ = json.Marshal(params)
	key := approvalKey(programRef(c), g.params, rule, p.Name)
	now := e.Now()
	a, err := e.store.LatestApproval(ctx, key)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return nil, nil, e.approvalStoreError(err)
	case a.Status == storage.ApprovalApproved && !a.Expired(now):
		err := e.store.UseApproval(ctx, a.ID, runID, now)
		if err == nil {
			a.Status, a.UsedRun, a.UsedAt = storage.ApprovalUsed, runID, now
			return &a, nil, nil
		}
		if !errors.Is(err, storage.ErrConflict) {
			return nil, nil, e.approvalStoreError(err)
		}
	case a.Status == storage.ApprovalPending && !a.Expired(now):
		return e.askPending(ctx, g, a)
	case a.Status == storage.ApprovalDeclined && now.Before(a.ExpiresAt):
		return nil, e.gateRefusal(g, a, rules.StatusDenied, "a human declined this deploy ("+a.ID+", by "+a.DecidedBy+" via "+a.Channel+"): nothing was installed"), nil
	}
	a, resp, err := e.newApproval(ctx, g, key, plan)
	if err != nil || resp != nil {
		return nil, resp, err
	}
	return e.askPending(ctx, g, a)
}

// newApproval stores a new pending request for g.
func (e *Engine) newApproval(ctx context.Context, g gateRequest, key string, plan *pilotage.Plan) (storage.Approval, *ExecuteResponse, error) {
	now := e.Now()
	n, err := e.store.CountOpenApprovals(ctx, g.p.Name, now)
	if err != nil {
		return storage.Approval{}, nil, e.approvalStoreError(err)
	}
	if n >= maxOpenApprovals {
		msg := fmt.Sprintf("principal %s already has %d deploys waiting for approval, the most kept: nothing was installed; ask a human to decide them, or wait until they expire", quote(g.p.Name), n)
		return storage.Approval{}, e.gateRefusal(g, storage.Approval{}, rules.StatusDenied, msg), nil
	}
	planJSON, _ := json.Marshal(plan)
	a := storage.Approval{ID: storage.NewApprovalID(), Key: key, Principal: g.p.Name, Rule: g.rule, Ref: programRef(g.c),
		Program: g.c.Raw, Params: g.params, Plan: planJSON, Risk: string(plan.MaxRisk), Status: storage.ApprovalPending,
		CreatedAt: now, ExpiresAt: now.Add(e.cfg.ApprovalTTL)}
	if err := e.store.CreateApproval(ctx, a); err != nil {
		return storage.Approval{}, nil, e.approvalStoreError(err)
	}
	e.log.Info("a deploy waits for a human's approval", "approval", a.ID, "rule", a.Rule, "principal", a.Principal, "risk", a.Risk)
	e.logApproval(a, "deploy of "+a.Rule+" by "+a.Principal+" waits for approval ("+a.Risk+")")
	return a, nil, nil
}

// askPending answers a pending request: through the client's own UI when
// it can ask its human (elicitation), else approval_pending.
func (e *Engine) askPending(ctx context.Context, g gateRequest, a storage.Approval) (*storage.Approval, *ExecuteResponse, error) {
	if used, resp, ok := e.askClient(ctx, g, a); ok {
		return used, resp, nil
	}
	msg := "this deploy's risk (" + a.Risk + ") needs a human's approval outside the model; nothing was installed. Ask the user to approve it at " +
		e.approvalURL(a.ID) + " (or with `pilothouse approve " + a.ID + "`) before " + a.ExpiresAt.In(e.cfg.TimeZone).Format("15:04 MST") +
		", then send the same request again"
	return nil, e.gateRefusal(g, a, rules.StatusApprovalPending, msg), nil
}

// gateRefusal is the response of a deploy the gate stopped: nothing was
// installed; the approval entry of its trace says why.
func (e *Engine) gateRefusal(g gateRequest, a storage.Approval, status, msg string) *ExecuteResponse {
	stepStatus := rules.StepFailed
	if status == rules.StatusApprovalPending {
		stepStatus = rules.StepApprovalPending
	}
	var rec *pilotage.Approval
	out := map[string]any{"reasons": g.reasons}
	if a.ID != "" {
		rec = e.approvalRecord(a, g.reasons)
		out["approval_id"], out["url"], out["expires_at"] = a.ID, rec.URL, a.ExpiresAt
	}
	step := pilotage.TraceStep{ID: "approval", Input: map[string]any{"rule": g.rule, "program_ref": programRef(g.c)}, Output: out,
		Outcome: pilotage.Outcome{OK: false, Status: stepStatus, Error: msg}}
	return &ExecuteResponse{RunID: g.runID, Outcome: pilotage.Outcome{OK: false, Status: status, Error: msg}, Approval: rec,
		Trace: &pilotage.Trace{Level: pilotage.LevelFull, Steps: []pilotage.TraceStep{step}}}
}

// approvedStep is the trace entry of a deploy that used approval a.
func approvedStep(a *storage.Approval) pilotage.TraceStep {
	return pilotage.TraceStep{ID: "approval", Input: map[string]any{"approval_id": a.ID},
		Output:  map[string]any{"approved_by": a.DecidedBy, "approved_at": a.DecidedAt, "channel": a.Channel, "requested_by": a.Principal},
		Outcome: pilotage.Outcome{OK: true, Status: rules.StepSuccess}}
}

// withApproval adds the approval a deploy used to its response.
func withApproval(resp *ExecuteResponse, a *storage.Approval, rec *pilotage.Approval) {
	if resp == nil || a == nil {
		return
	}
	resp.Approval = rec
	if resp.Trace != nil {
		resp.Trace.Steps = append([]pilotage.TraceStep{approvedStep(a)}, resp.Trace.Steps...)
	}
}

func (e *Engine) approvalStoreError(err error) error {
	if errors.Is(err, storage.ErrUnavailable) {
		e.log.Warn("the risk gate could not read or record an approval; nothing was installed", "err", err)
		return storageRequestError("the deploy's approval could not be checked or recorded, so nothing was installed", "")
	}
	return fmt.Errorf("engine: approvals: %w", err)
}

// approvalURL is the web page where a human decides request id.
func (e *Engine) approvalURL(id string) string {
	return e.cfg.WebURL + "/approvals/" + id
}
