package access

import (
	"path"

	"github.com/pilothouse/pilothouse/pilotage"
)

// ApprovalPolicy is one principal's risk-gate policy.
type ApprovalPolicy struct {
	// Require names the risk hints whose presence in a deploy's bound plan
	// needs approval ("destructive", "openWorld"); nil means both, an
	// empty list none.
	Require []string `json:"require,omitempty"`
	// PreApproved are path.Match patterns of catalog entry ids whose calls
	// need no approval (e.g. "notify.phone").
	PreApproved []string `json:"pre_approved,omitempty"`
	// SelfApprove lets an approver approve its own requests (the owner
	// always may: it is the human the house answers to).
	SelfApprove bool `json:"self_approve,omitempty"`
}

// Risk hint names a policy's Require admits.
const (
	HintDestructive = "destructive"
	HintOpenWorld   = "openWorld"
)

// Reasons says why plan needs approval under pol; none when it does not.
// A missing plan fails closed (spec §7.3).
func (pol *ApprovalPolicy) Reasons(plan *pilotage.Plan) []string {
	need := pol.Require
	if need == nil {
		need = []string{HintDestructive, HintOpenWorld}
	}
	if len(need) == 0 {
		return nil
	}
	if plan == nil {
		return []string{"no plan: missing risk information is treated as risky"}
	}
	var out []string
	seen := map[string]bool{}
	for _, st := range plan.Steps {
		if len(st.Calls) > 0 && pol.preApproved(st.Calls) {
			continue
		}
		for _, h := range need {
			risky := h == HintDestructive && st.RiskHints.Destructive || h == HintOpenWorld && st.RiskHints.OpenWorld
			if !risky {
				continue
			}
			what := st.ID
			if len(st.Calls) > 0 {
				what = st.Calls[0]
			}
			if r := h + ": " + what; !seen[r] {
				seen[r] = true
				out = append(out, r)
			}
		}
	}
	return out
}

func (pol *ApprovalPolicy) preApproved(calls []string) bool {
	for _, id := range calls {
		ok := false
		for _, pat := range pol.PreApproved {
			if m, _ := path.Match(pat, id); m {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
