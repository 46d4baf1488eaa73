// Package approval is the Host risk gate's book of approval requests: it
// stores a risky deploy's request, asks the caller's human or waits for an
// approver, and lets a deploy use an approval once.
package approval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/access"
	"github.com/pilothouse/pilothouse/engine/internal/clocktext"
	"github.com/pilothouse/pilothouse/internal/shown"
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

// DefaultTTL is how long a request waits for a human, and an approval for
// the retry that uses it.
const DefaultTTL = 15 * time.Minute

// maxOpen bounds one principal's pending requests: a caller that keeps
// deploying new risky programs cannot flood the approvers' list.
const maxOpen = 20

// Config is what the book needs from the engine.
type Config struct {
	TTL    time.Duration
	WebURL string
	Zone   *time.Location
	// Policy is the risk-gate policy of principals without their own.
	Policy *access.ApprovalPolicy
	Now    func() time.Time
	// Note records a request or its decision in the logbook.
	Note func(a storage.Approval, text string)
	// Unavailable is the request error for storage that cannot answer.
	Unavailable func(what string) error
}

// Book keeps the approval requests; store may be nil (no requests).
type Book struct {
	cfg   Config
	store *storage.Store
	log   *slog.Logger

	decidedMu sync.Mutex
	decided   chan struct{} // closed and replaced when a request is decided (AwaitDecision)
}

// New returns the book over store.
func New(cfg Config, store *storage.Store, log *slog.Logger) *Book {
	return &Book{cfg: cfg, store: store, log: log, decided: make(chan struct{})}
}

// PolicyOf is p's risk-gate policy.
func (b *Book) PolicyOf(p *access.Principal) *access.ApprovalPolicy {
	if p.Approval != nil {
		return p.Approval
	}
	return b.cfg.Policy
}

// Key binds an approval to exactly one deploy; params are canonical JSON.
func Key(ref string, params []byte, rule, principal string) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(ref), params, []byte(rule), []byte(principal)} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Request is a deploy at the risk gate.
type Request struct {
	P       *access.Principal
	RunID   string
	Rule    string
	Ref     string          // the program as written: its ref
	Program json.RawMessage // and its source
	Plan    *pilotage.Plan  // the bound plan (what runs)
	Summary string          // the bound program's own plan summary, for the question
	Params  []byte
	Key     string
	Reasons []string // why the policy needs approval; none: the deploy passes
}

// Refusal is the answer of a deploy the gate stopped: nothing was
// installed; the approval entry of its trace says why.
type Refusal struct {
	Outcome  pilotage.Outcome
	Approval *pilotage.Approval
	Trace    *pilotage.Trace
}

// Gate applies the risk gate to a deploy. It returns the approval the
// deploy uses (nil: none needed), or the refusal that stops it.
func (b *Book) Gate(ctx context.Context, g Request) (*storage.Approval, *Refusal, error) {
	if len(g.Reasons) == 0 {
		return nil, nil, nil
	}
	now := b.cfg.Now()
	a, err := b.store.LatestApproval(ctx, g.Key)
	earlier := ""
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return nil, nil, b.storeError(err)
	case a.Status == storage.ApprovalApproved && !a.Expired(now):
		err := b.store.UseApproval(ctx, a.ID, g.RunID, now)
		if err == nil {
			a.Status, a.UsedRun, a.UsedAt = storage.ApprovalUsed, g.RunID, now
			return &a, nil, nil
		}
		if !errors.Is(err, storage.ErrConflict) {
			return nil, nil, b.storeError(err)
		}
	case a.Status == storage.ApprovalPending && !a.Expired(now):
		return b.askPending(ctx, g, a, "")
	case a.Status == storage.ApprovalDeclined && now.Before(a.ExpiresAt):
		return nil, b.refusal(g, a, rules.StatusDenied, "a human declined this deploy ("+a.ID+", by "+a.DecidedBy+" via "+a.Channel+"): nothing was installed"), nil
	default:
		earlier = b.lapsed(a, now)
	}
	a, refused, err := b.newRequest(ctx, g)
	if err != nil || refused != nil {
		return nil, refused, err
	}
	return b.askPending(ctx, g, a, earlier)
}

// lapsed says how the earlier request a for the same deploy lapsed ("" when
// it did not: none, or one used already), so a retry that makes a new
// request does not hide that the first one expired.
func (b *Book) lapsed(a storage.Approval, now time.Time) string {
	if a.ID == "" || !a.Expired(now) {
		return ""
	}
	at := clocktext.Text(a.ExpiresAt, b.cfg.Zone)
	switch a.Status {
	case storage.ApprovalPending:
		return "the earlier approval request " + a.ID + " for this deploy lapsed unanswered at " + at + "; a new one was made, and a person must approve it again. "
	case storage.ApprovalApproved:
		return "the earlier approval " + a.ID + " for this deploy (approved by " + a.DecidedBy + ") lapsed unused at " + at + "; a new request was made, and a person must approve it again. "
	}
	return ""
}

// newRequest stores a new pending request for g.
func (b *Book) newRequest(ctx context.Context, g Request) (storage.Approval, *Refusal, error) {
	now := b.cfg.Now()
	n, err := b.store.CountOpenApprovals(ctx, g.P.Name, now)
	if err != nil {
		return storage.Approval{}, nil, b.storeError(err)
	}
	if n >= maxOpen {
		msg := fmt.Sprintf("principal %s already has %d deploys waiting for approval, the most kept: nothing was installed; ask a human to decide them, or wait until they expire", shown.Quote(g.P.Name), n)
		return storage.Approval{}, b.refusal(g, storage.Approval{}, rules.StatusDenied, msg), nil
	}
	planJSON, _ := json.Marshal(g.Plan)
	a := storage.Approval{ID: storage.NewApprovalID(), Key: g.Key, Principal: g.P.Name, Rule: g.Rule, Ref: g.Ref,
		Program: g.Program, Params: g.Params, Plan: planJSON, Risk: string(g.Plan.MaxRisk), Status: storage.ApprovalPending,
		CreatedAt: now, ExpiresAt: now.Add(b.cfg.TTL)}
	if err := b.store.CreateApproval(ctx, a); err != nil {
		return storage.Approval{}, nil, b.storeError(err)
	}
	b.log.Info("a deploy waits for a human's approval", "approval", a.ID, "rule", a.Rule, "principal", a.Principal, "risk", a.Risk)
	b.cfg.Note(a, "deploy of "+a.Rule+" by "+a.Principal+" waits for approval ("+a.Risk+")")
	return a, nil, nil
}

// askPending answers a pending request: through the client's own UI when
// it can ask its human (elicitation), else approval_pending. earlier says
// how an earlier request for the deploy lapsed ("" for none). The answer
// is read by the model: it names the page where a person decides, never a
// command the model could run to approve its own deploy.
func (b *Book) askPending(ctx context.Context, g Request, a storage.Approval, earlier string) (*storage.Approval, *Refusal, error) {
	if used, refused, ok := b.askClient(ctx, g, a); ok {
		return used, refused, nil
	}
	msg := earlier + "this deploy's risk (" + a.Risk + ") needs a person's approval outside the model; nothing was installed. Ask the user to approve it at " +
		b.URL(a.ID) + " before " + clocktext.Text(a.ExpiresAt, b.cfg.Zone) +
		" (a person must decide it: do not approve it yourself), then send the same request again"
	return nil, b.refusal(g, a, rules.StatusApprovalPending, msg), nil
}

// refusal is the answer of a deploy the gate stopped.
func (b *Book) refusal(g Request, a storage.Approval, status, msg string) *Refusal {
	stepStatus := rules.StepFailed
	if status == rules.StatusApprovalPending {
		stepStatus = rules.StepApprovalPending
	}
	var rec *pilotage.Approval
	out := map[string]any{"reasons": g.Reasons}
	if a.ID != "" {
		rec = b.Record(a, g.Reasons)
		out["approval_id"], out["url"], out["expires_at"] = a.ID, rec.URL, a.ExpiresAt
	}
	step := pilotage.TraceStep{ID: "approval", Input: map[string]any{"rule": g.Rule, "program_ref": g.Ref}, Output: out,
		Outcome: pilotage.Outcome{OK: false, Status: stepStatus, Error: msg}}
	return &Refusal{Outcome: pilotage.Outcome{OK: false, Status: status, Error: msg}, Approval: rec,
		Trace: &pilotage.Trace{Level: pilotage.LevelFull, Steps: []pilotage.TraceStep{step}}}
}

// UsedStep is the trace entry of a deploy that used approval a.
func UsedStep(a *storage.Approval) pilotage.TraceStep {
	return pilotage.TraceStep{ID: "approval", Input: map[string]any{"approval_id": a.ID},
		Output: map[string]any{"approved_by": a.DecidedBy, "approved_at": a.DecidedAt, "channel": a.Channel, "requested_by": a.Principal,
			"self_approved": SelfApproved(*a)},
		Outcome: pilotage.Outcome{OK: true, Status: rules.StepSuccess}}
}

// SelfApproved reports whether a was decided by the principal that
// requested it: the gate then separated no one (with the loopback default
// every caller is the owner), and records and pages say so.
func SelfApproved(a storage.Approval) bool {
	return a.DecidedBy != "" && a.DecidedBy == a.Principal
}

func (b *Book) storeError(err error) error {
	if errors.Is(err, storage.ErrUnavailable) {
		b.log.Warn("the risk gate could not read or record an approval; nothing was installed", "err", err)
		return b.cfg.Unavailable("the deploy's approval could not be checked or recorded, so nothing was installed")
	}
	return fmt.Errorf("engine: approvals: %w", err)
}

// URL is the web page where a human decides request id.
func (b *Book) URL(id string) string {
	return b.cfg.WebURL + "/approvals/" + id
}
