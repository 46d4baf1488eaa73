package approval

import (
	"slices"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/access"
	"github.com/pilothouse/pilothouse/pilotage"
)

// TestNeedsPerson: the one check a manual run, switching or removing a
// rule and replacing another principal's rule share: who must ask a
// person, for which plans and whose rules.
func TestNeedsPerson(t *testing.T) {
	lock := pilotage.PlanStep{ID: "s", Kind: "call", Calls: []string{"front_lock.set"}, Risk: pilotage.RiskSecurity,
		RiskHints: pilotage.RiskHints{Destructive: true}}
	notify := pilotage.PlanStep{ID: "n", Kind: "call", Calls: []string{"notify.phone"}, Risk: pilotage.RiskExternal,
		RiskHints: pilotage.RiskHints{OpenWorld: true}}
	light := pilotage.PlanStep{ID: "l", Kind: "call", Calls: []string{"porch_light.set"}, Risk: pilotage.RiskControl}
	risky := &pilotage.Plan{Steps: []pilotage.PlanStep{light, lock}}
	harmless := &pilotage.Plan{Steps: []pilotage.PlanStep{light}}
	notifying := &pilotage.Plan{Steps: []pilotage.PlanStep{notify}}

	owner := access.Owner
	selfApprover := &access.Principal{Name: "adult", Deploy: true, Approver: true, Approval: &access.ApprovalPolicy{SelfApprove: true}}
	approver := &access.Principal{Name: "partner", Deploy: true, Approver: true}
	assistant := &access.Principal{Name: "assistant", Deploy: true}
	trusted := &access.Principal{Name: "script", Deploy: true, Approval: &access.ApprovalPolicy{Require: []string{}}}
	lockOnly := &access.Principal{Name: "helper", Deploy: true, Approval: &access.ApprovalPolicy{Require: []string{access.HintDestructive}}}
	b := New(Config{Policy: &access.ApprovalPolicy{PreApproved: []string{"notify.*"}}, Now: time.Now}, nil, nil)

	const lockReason = "destructive: front_lock.set"
	for _, tc := range []struct {
		name      string
		p         *access.Principal
		plan      *pilotage.Plan
		installer string
		want      []string
	}{
		{"owner runs a risky plan by hand", owner, risky, "", nil},
		{"owner disarms another's risky rule", owner, risky, "assistant", nil},
		{"self_approve approver runs a risky plan by hand", selfApprover, risky, "", nil},
		{"self_approve approver disarms another's risky rule", selfApprover, risky, "owner", nil},
		{"approver without self_approve runs a risky plan by hand", approver, risky, "", []string{lockReason}},
		{"approver without self_approve disarms another's risky rule", approver, risky, "owner", []string{lockReason}},
		{"approver without self_approve disarms its own risky rule", approver, risky, "partner", nil},
		{"gated assistant runs a harmless plan by hand", assistant, harmless, "", nil},
		{"gated assistant runs a risky plan by hand", assistant, risky, "", []string{lockReason}},
		{"gated assistant disarms its own risky rule", assistant, risky, "assistant", nil},
		{"gated assistant disarms another's risky rule", assistant, risky, "owner", []string{lockReason}},
		{"gated assistant disarms another's harmless rule", assistant, harmless, "owner", nil},
		{"gated assistant without a plan fails closed", assistant, nil, "", []string{"no plan: missing risk information is treated as risky"}},
		{"gated assistant sends a pre-approved notification", assistant, notifying, "", nil},
		{"own policy requiring nothing", trusted, risky, "owner", nil},
		{"own policy requiring destructive only, notifying", lockOnly, notifying, "", nil},
		{"own policy requiring destructive only, locking", lockOnly, risky, "owner", []string{lockReason}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := b.NeedsPerson(tc.p, tc.plan, tc.installer); !slices.Equal(got, tc.want) {
				t.Errorf("NeedsPerson(%s, installer %q) = %q, want %q", tc.p.Name, tc.installer, got, tc.want)
			}
		})
	}
}
