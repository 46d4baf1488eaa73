package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/access"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

// Approval channels: how a human decided a request.
const (
	ChannelWeb         = "web"
	ChannelCLI         = "cli"
	ChannelElicitation = "mcp-elicitation"
)

// ErrNotFound is returned for unknown approval ids (and for those the
// caller may not see).
var ErrNotFound = errors.New("no approval request with that id")

// ErrMayNotApprove is returned when the caller may not decide a request:
// only the owner and principals marked approver decide, and an approver
// never decides its own request unless its policy allows it.
var ErrMayNotApprove = errors.New("this principal may not decide this approval request")

// ErrClosed is returned when a request is no longer pending: it was
// decided already, used, or it expired.
var ErrClosed = errors.New("this approval request is no longer pending (decided, used or expired)")

// Detail is one request as an approver sees it before deciding: the
// program as written, the params it binds, the plan with bound arguments,
// and the installed rule it would replace.
type Detail struct {
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

// Record is a stored request as the wire shows it.
func (b *Book) Record(a storage.Approval, reasons []string) *pilotage.Approval {
	zone := b.cfg.Zone
	if zone == nil {
		zone = time.UTC
	}
	rec := &pilotage.Approval{ID: a.ID, Status: a.Status, URL: b.URL(a.ID), ExpiresAt: a.ExpiresAt.In(zone), Rule: a.Rule,
		Principal: a.Principal, Ref: a.Ref, Risk: pilotage.Risk(a.Risk), Reasons: reasons, CreatedAt: a.CreatedAt.In(zone),
		DecidedBy: a.DecidedBy, Channel: a.Channel, UsedRun: a.UsedRun, SelfApproved: SelfApproved(a)}
	if !a.DecidedAt.IsZero() {
		t := a.DecidedAt.In(zone)
		rec.DecidedAt = &t
	}
	if a.Expired(b.cfg.Now()) {
		rec.Status = "expired"
	}
	if rec.Status == storage.ApprovalPending {
		rec.Next = "a person (not the model) approves or declines it at url; once approved, send the same execute request again"
	}
	return rec
}

// MayApprove reports whether p may decide a request made by requester.
func (b *Book) MayApprove(p *access.Principal, requester string) bool {
	switch {
	case p.Name == access.Owner.Name:
		return true
	case !p.Approver:
		return false
	case p.Name == requester:
		return b.PolicyOf(p).SelfApprove
	}
	return true
}

// NeedsPerson is why p may not act on plan without a person who is not
// p (none: it may), the one check for a manual run and for switching,
// removing or replacing a rule. installer is who installed the rule whose
// plan it is ("" for a manual run): p's own rule passed the gate when p
// deployed it, and a principal that may approve its own requests would
// only be asking itself.
func (b *Book) NeedsPerson(p *access.Principal, plan *pilotage.Plan, installer string) []string {
	if installer != "" && installer == p.Name || b.MayApprove(p, p.Name) {
		return nil
	}
	return b.PolicyOf(p).Reasons(plan)
}

// MaySee reports whether p may see a request made by requester: it may
// decide it, made it, or is an admin.
func (b *Book) MaySee(p *access.Principal, requester string) bool {
	return b.MayApprove(p, requester) || requester == p.Name || p.Admin
}

// List lists the requests p may see, newest first; openOnly keeps those
// still pending.
func (b *Book) List(ctx context.Context, p *access.Principal, openOnly bool) ([]pilotage.Approval, error) {
	if b.store == nil {
		return []pilotage.Approval{}, nil
	}
	list, err := b.store.ListApprovals(ctx, openOnly, b.cfg.Now(), 200)
	if err != nil {
		return nil, fmt.Errorf("engine: listing approvals: %w", err)
	}
	out := []pilotage.Approval{}
	for _, a := range list {
		if b.MaySee(p, a.Principal) {
			out = append(out, *b.Record(a, nil))
		}
	}
	return out, nil
}

// Get returns one request as p sees it; the engine adds what it would
// replace (Installed, InstalledParams, RunsInProgress) from the rule
// named a.Rule.
func (b *Book) Get(ctx context.Context, p *access.Principal, id string) (Detail, storage.Approval, error) {
	if b.store == nil {
		return Detail{}, storage.Approval{}, ErrNotFound
	}
	a, err := b.store.GetApproval(ctx, id)
	if errors.Is(err, storage.ErrNotFound) || err == nil && !b.MaySee(p, a.Principal) {
		return Detail{}, storage.Approval{}, ErrNotFound
	}
	if err != nil {
		return Detail{}, storage.Approval{}, fmt.Errorf("engine: reading approval: %w", err)
	}
	d := Detail{Approval: *b.Record(a, nil), Program: a.Program, Params: a.Params}
	d.CanDecide = d.Status == storage.ApprovalPending && b.MayApprove(p, a.Principal)
	if len(a.Plan) > 0 {
		var plan pilotage.Plan
		if json.Unmarshal(a.Plan, &plan) == nil {
			d.Plan = &plan
		}
	}
	return d, a, nil
}

// Decide approves or declines a pending request as p, recording who,
// when and through which channel.
func (b *Book) Decide(ctx context.Context, p *access.Principal, id string, approve bool, channel string) (pilotage.Approval, error) {
	if b.store == nil {
		return pilotage.Approval{}, ErrNotFound
	}
	a, err := b.store.GetApproval(ctx, id)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return pilotage.Approval{}, ErrNotFound
	case err != nil:
		return pilotage.Approval{}, fmt.Errorf("engine: reading approval: %w", err)
	case !b.MayApprove(p, a.Principal):
		if a.Principal != p.Name && !p.Admin {
			return pilotage.Approval{}, ErrNotFound
		}
		return pilotage.Approval{}, ErrMayNotApprove
	}
	err = b.store.DecideApproval(ctx, id, approve, p.Name, channel, b.cfg.Now())
	if errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound) {
		return pilotage.Approval{}, ErrClosed
	}
	if err != nil {
		return pilotage.Approval{}, fmt.Errorf("engine: deciding approval: %w", err)
	}
	b.wake()
	a, err = b.store.GetApproval(ctx, id)
	if err != nil {
		return pilotage.Approval{}, fmt.Errorf("engine: reading approval: %w", err)
	}
	self := ""
	if SelfApproved(a) {
		self = ", self-approved"
	}
	b.log.Info("approval decided", "approval", id, "status", a.Status, "by", p.Name, "channel", channel, "rule", a.Rule, "self_approved", SelfApproved(a))
	b.cfg.Note(a, "deploy of "+a.Rule+" by "+a.Principal+" "+a.Status+" by "+p.Name+" ("+channel+self+")")
	return *b.Record(a, nil), nil
}

// RuleApproval is the approval the installed deploy of rule (at ref)
// used, if any.
func (b *Book) RuleApproval(ctx context.Context, rule, ref string) *pilotage.Approval {
	a, err := b.store.LastUsedApproval(ctx, rule)
	if err != nil || a.Ref != ref {
		return nil
	}
	return b.Record(a, nil)
}
