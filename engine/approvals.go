package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

// Approval channels: how a human decided a request.
const (
	ChannelWeb         = "web"
	ChannelCLI         = "cli"
	ChannelElicitation = "mcp-elicitation"
)

// ErrApprovalNotFound is returned for unknown approval ids (and for those
// the caller may not see).
var ErrApprovalNotFound = errors.New("no approval request with that id")

// ErrMayNotApprove is returned when the caller may not decide a request:
// only the owner and principals marked approver decide, and an approver
// never decides its own request unless its policy allows it.
var ErrMayNotApprove = errors.New("this principal may not decide this approval request")

// ErrApprovalClosed is returned when a request is no longer pending: it
// was decided already, used, or it expired.
var ErrApprovalClosed = errors.New("this approval request is no longer pending (decided, used or expired)")

// ApprovalDetail is one request as an approver sees it before deciding:
// the program as written, the params it binds, the plan with bound
// arguments, and the installed rule it would replace.
type ApprovalDetail struct {
	pilotage.Approval
	Program   json.RawMessage
	Params    json.RawMessage
	Plan      *pilotage.Plan
	Installed json.RawMessage // the program of the rule of that name now, or nil
	// InstalledParams are the installed rule's params; RunsInProgress its
	// runs that installing this would cancel, as of now.
	InstalledParams json.RawMessage
	RunsInProgress  int
	// CanDecide: the caller may approve or decline it now.
	CanDecide bool
}

// approvalRecord is a stored request as the wire shows it.
func (e *Engine) approvalRecord(a storage.Approval, reasons []string) *pilotage.Approval {
	rec := &pilotage.Approval{ID: a.ID, Status: a.Status, URL: e.approvalURL(a.ID), ExpiresAt: a.ExpiresAt, Rule: a.Rule,
		Principal: a.Principal, Ref: a.Ref, Risk: pilotage.Risk(a.Risk), Reasons: reasons, CreatedAt: a.CreatedAt,
		DecidedBy: a.DecidedBy, Channel: a.Channel, UsedRun: a.UsedRun}
	if !a.DecidedAt.IsZero() {
		t := a.DecidedAt
		rec.DecidedAt = &t
	}
	if a.Expired(e.Now()) {
		rec.Status = "expired"
	}
	if rec.Status == storage.ApprovalPending {
		rec.Next = "a human approves or declines it at url (or with `pilothouse approve " + a.ID + "`); once approved, send the same execute request again"
	}
	return rec
}

// mayApprove reports whether p may decide a request made by requester.
func (e *Engine) mayApprove(p *Principal, requester string) bool {
	switch {
	case p.Name == Owner.Name:
		return true
	case !p.Approver:
		return false
	case p.Name == requester:
		return e.policyOf(p).SelfApprove
	}
	return true
}

// ListApprovals lists the requests the caller may decide or made, newest
// first; openOnly keeps those still pending.
func (e *Engine) ListApprovals(ctx context.Context, openOnly bool) ([]pilotage.Approval, error) {
	if e.store == nil {
		return []pilotage.Approval{}, nil
	}
	p := e.principal(ctx)
	list, err := e.store.ListApprovals(ctx, openOnly, e.Now(), 200)
	if err != nil {
		return nil, fmt.Errorf("engine: listing approvals: %w", err)
	}
	out := []pilotage.Approval{}
	for _, a := range list {
		if e.mayApprove(p, a.Principal) || a.Principal == p.Name || p.Admin {
			out = append(out, *e.approvalRecord(a, nil))
		}
	}
	return out, nil
}

// GetApproval returns one request with what it would install.
func (e *Engine) GetApproval(ctx context.Context, id string) (ApprovalDetail, error) {
	p := e.principal(ctx)
	if e.store == nil {
		return ApprovalDetail{}, ErrApprovalNotFound
	}
	a, err := e.store.GetApproval(ctx, id)
	if errors.Is(err, storage.ErrNotFound) || err == nil && !(e.mayApprove(p, a.Principal) || a.Principal == p.Name || p.Admin) {
		return ApprovalDetail{}, ErrApprovalNotFound
	}
	if err != nil {
		return ApprovalDetail{}, fmt.Errorf("engine: reading approval: %w", err)
	}
	d := ApprovalDetail{Approval: *e.approvalRecord(a, nil), Program: a.Program, Params: a.Params}
	d.CanDecide = d.Status == storage.ApprovalPending && e.mayApprove(p, a.Principal)
	if len(a.Plan) > 0 {
		var plan pilotage.Plan
		if json.Unmarshal(a.Plan, &plan) == nil {
			d.Plan = &plan
		}
	}
	if r, err := e.store.GetRule(ctx, a.Rule); err == nil {
		d.InstalledParams = r.Params
		if ar := e.sched.ruleByName(r.Name); ar != nil {
			d.RunsInProgress = ar.inProgress()
		}
		if b := e.body(r.Ref); b != nil {
			d.Installed = b.compiled.Raw
		}
	}
	return d, nil
}

// DecideApproval approves or declines a pending request as the caller,
// recording who, when and through which channel.
func (e *Engine) DecideApproval(ctx context.Context, id string, approve bool, channel string) (pilotage.Approval, error) {
	p := e.principal(ctx)
	if e.store == nil {
		return pilotage.Approval{}, ErrApprovalNotFound
	}
	a, err := e.store.GetApproval(ctx, id)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return pilotage.Approval{}, ErrApprovalNotFound
	case err != nil:
		return pilotage.Approval{}, fmt.Errorf("engine: reading approval: %w", err)
	case !e.mayApprove(p, a.Principal):
		if a.Principal != p.Name && !p.Admin {
			return pilotage.Approval{}, ErrApprovalNotFound
		}
		return pilotage.Approval{}, ErrMayNotApprove
	}
	now := e.Now()
	err = e.store.DecideApproval(ctx, id, approve, p.Name, channel, now)
	if errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound) {
		return pilotage.Approval{}, ErrApprovalClosed
	}
	if err != nil {
		return pilotage.Approval{}, fmt.Errorf("engine: deciding approval: %w", err)
	}
	e.approvalDecided()
	a, err = e.store.GetApproval(ctx, id)
	if err != nil {
		return pilotage.Approval{}, fmt.Errorf("engine: reading approval: %w", err)
	}
	e.log.Info("approval decided", "approval", id, "status", a.Status, "by", p.Name, "channel", channel, "rule", a.Rule)
	e.logApproval(a, "deploy of "+a.Rule+" by "+a.Principal+" "+a.Status+" by "+p.Name+" ("+channel+")")
	return *e.approvalRecord(a, nil), nil
}

// ruleApproval is the approval the installed deploy of rule used, if any.
func (e *Engine) ruleApproval(ctx context.Context, rule, ref string) *pilotage.Approval {
	a, err := e.store.LastUsedApproval(ctx, rule)
	if err != nil || a.Ref != ref {
		return nil
	}
	return e.approvalRecord(a, nil)
}
