package engine

import (
	"context"
	"encoding/json"

	"github.com/pilothouse/pilothouse/engine/internal/approval"
	"github.com/pilothouse/pilothouse/engine/internal/promoted"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// The Host risk gate's approval requests (see package approval), as the
// engine's callers name them.
type (
	ApprovalDetail = approval.Detail
	AskRequest     = approval.AskRequest
	Answer         = approval.Answer
	Asker          = approval.Asker
)

// DefaultApprovalTTL is how long a request waits for a human, and an
// approval for the retry that uses it.
const DefaultApprovalTTL = approval.DefaultTTL

// Approval channels and the answers of the person at the client.
const (
	ChannelWeb         = approval.ChannelWeb
	ChannelCLI         = approval.ChannelCLI
	ChannelElicitation = approval.ChannelElicitation
	AnswerDeclined     = approval.AnswerDeclined
	AnswerApproved     = approval.AnswerApproved
	AnswerElsewhere    = approval.AnswerElsewhere
)

// The approval requests' errors.
var (
	ErrApprovalNotFound = approval.ErrNotFound
	ErrMayNotApprove    = approval.ErrMayNotApprove
	ErrApprovalClosed   = approval.ErrClosed
)

// WithAsker returns ctx carrying the way to ask the caller's human.
func WithAsker(ctx context.Context, ask Asker) context.Context { return approval.WithAsker(ctx, ask) }

// newApprovals is the engine's book of approval requests.
func (e *Engine) newApprovals() *approval.Book {
	return approval.New(approval.Config{TTL: e.cfg.ApprovalTTL, WebURL: e.cfg.WebURL, Zone: e.cfg.TimeZone,
		Policy: &e.cfg.Approval, Now: e.cfg.Now, Note: e.logApproval,
		Unavailable: func(what string) error { return storageRequestError(what, "") }}, e.store, e.log)
}

// gate applies the risk gate to a deploy. It returns the approval the
// deploy uses (nil: none needed), or the response that refuses it.
func (e *Engine) gate(ctx context.Context, p *Principal, runID, rule string, c *rules.Compiled, b *bound, params map[string]any) (*storage.Approval, *ExecuteResponse, error) {
	plan := b.c.Plan
	if plan == nil {
		plan = rules.BuildPlan(b.c)
	}
	g := approval.Request{P: p, RunID: runID, Rule: rule, Ref: promoted.Ref(c), Program: c.Raw, Plan: plan,
		Reasons: append(e.approvals.PolicyOf(p).Reasons(plan), e.replacedReasons(ctx, p, rule)...)}
	if len(g.Reasons) == 0 {
		return nil, nil, nil
	}
	if b.c.Plan != nil {
		g.Summary = b.c.Plan.Summary
	}
	g.Params, _ = json.Marshal(params)
	g.Key = approval.Key(g.Ref, pilotage.CanonicalJSON(g.Params), rule, p.Name)
	used, refused, err := e.approvals.Gate(ctx, g)
	if refused != nil {
		return nil, &ExecuteResponse{RunID: runID, Outcome: refused.Outcome, Approval: refused.Approval, Trace: refused.Trace}, err
	}
	return used, nil, err
}

// replacedReasons is why replacing the installed rule of that name needs
// a person: another principal's rule whose plan p's policy would gate (a
// harmless body under the night-lock rule's name disarms it as surely as
// disabling it would).
func (e *Engine) replacedReasons(ctx context.Context, p *Principal, rule string) []string {
	if e.store == nil || rule == "" {
		return nil
	}
	old, err := e.store.GetRule(ctx, rule)
	if err != nil || !e.visibleRule(p, old) {
		return nil // a rule p cannot see, deploy refuses to replace
	}
	var out []string
	for _, r := range e.othersRiskyRule(p, rule, old.Principal) {
		out = append(out, "replaces "+old.Principal+"'s rule "+shown.Quote(rule)+": "+r)
	}
	return out
}

// withApproval adds the approval a deploy used to its response.
func (e *Engine) withApproval(resp *ExecuteResponse, a *storage.Approval) {
	if resp == nil || a == nil {
		return
	}
	resp.Approval = e.approvals.Record(*a, nil)
	if resp.Trace != nil {
		resp.Trace.Steps = append([]pilotage.TraceStep{approval.UsedStep(a)}, resp.Trace.Steps...)
	}
}

// ListApprovals lists the requests the caller may decide or made, newest
// first; openOnly keeps those still pending.
func (e *Engine) ListApprovals(ctx context.Context, openOnly bool) ([]pilotage.Approval, error) {
	return e.approvals.List(ctx, e.principal(ctx), openOnly)
}

// GetApproval returns one request with what it would install.
func (e *Engine) GetApproval(ctx context.Context, id string) (ApprovalDetail, error) {
	d, a, err := e.approvals.Get(ctx, e.principal(ctx), id)
	if err != nil {
		return d, err
	}
	if r, err := e.store.GetRule(ctx, a.Rule); err == nil {
		d.InstalledParams = r.Params
		if ar := e.sched.Rule(r.Name); ar != nil {
			d.RunsInProgress = ar.InProgress()
		}
		if b := e.body(r.Ref); b != nil {
			d.Installed = b.Compiled().Raw
		}
	}
	return d, nil
}

// DecideApproval approves or declines a pending request as the caller,
// recording who, when and through which channel.
func (e *Engine) DecideApproval(ctx context.Context, id string, approve bool, channel string) (pilotage.Approval, error) {
	return e.approvals.Decide(ctx, e.principal(ctx), id, approve, channel)
}

// AwaitDecision waits until request id is no longer pending (decided,
// or expired) or ctx ends: a URL-mode elicitation holds its deploy open
// while the person decides on the web page.
func (e *Engine) AwaitDecision(ctx context.Context, id string) error {
	return e.approvals.AwaitDecision(ctx, id)
}
