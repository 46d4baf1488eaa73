package pilotclient

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/pilothouse/pilothouse/pilotage"
)

// StatusPromotionDrift is terminal for a program_ref (spec §7.5).
const StatusPromotionDrift = "promotion_drift"

// RefResult is what one promoted-program Run did.
type RefResult struct {
	// Entry is the promoted entry the last attempt was gated on.
	Entry *pilotage.Entry
	// Gate is the last gate request (nil when no approval was needed).
	Gate *GateRequest
	// Execution is the last execute answer (nil when nothing ran).
	Execution *ExecuteResult
	// Attempts counts execute requests (at most 2).
	Attempts int
}

// RunRef follows the promoted-program loop (spec §7.4): get the promoted
// entry, gate on its risk_hints, execute with the lookup's catalog_version,
// and on catalog_drift get it again, re-gate and retry once.
// promotion_drift is returned as the outcome: retrying the same ref cannot
// succeed, the program must be promoted again.
func (c *Client) RunRef(ctx context.Context, ref string, o RunOptions) (*RefResult, error) {
	if err := c.need("execute"); err != nil {
		return nil, err
	}
	res := &RefResult{}
	var approved json.RawMessage
	for attempt := 1; attempt <= 2; attempt++ {
		g, err := c.Get(ctx, ref)
		if err != nil {
			return res, err
		}
		res.Entry = g.Entry
		if g.Entry == nil || g.Entry.Kind != pilotage.KindAutomation || !g.Entry.Callable {
			return res, fmt.Errorf("%s is not a callable promoted program", ref)
		}
		if !o.TestRun {
			reasons := EntryGateReasons(g.RawEntry)
			res.Gate = nil
			if len(reasons) > 0 {
				gr := &GateRequest{Reasons: reasons, Attempt: attempt}
				res.Gate = gr
				if approved == nil || string(approved) != string(g.RawEntry) {
					if o.Approve == nil {
						return res, ErrNotApproved
					}
					ok, err := o.Approve(ctx, gr)
					if err != nil {
						return res, err
					}
					if !ok {
						return res, ErrNotApproved
					}
					approved = g.RawEntry
				}
			}
		}
		if o.BeforeExecute != nil {
			if err := o.BeforeExecute(ctx, attempt); err != nil {
				return res, err
			}
		}
		er, err := c.execute(ctx, ExecuteRequest{ProgramRef: ref, Input: o.Input, TestRun: o.TestRun,
			TraceLevel: pilotage.LevelFull, ExpectedCatalogVersion: g.CatalogVersion, IdempotencyKey: NewKey()}, o)
		res.Attempts = attempt
		if err != nil {
			return res, err
		}
		res.Execution = er
		if er.Outcome.Status != StatusCatalogDrift {
			return res, nil
		}
		if o.OnDrift != nil && attempt == 1 {
			o.OnDrift(er, []string{ref})
		}
	}
	return res, nil
}

// EntryGateReasons applies the risk gate to a promoted entry's risk_hints,
// failing closed on missing or malformed members.
func EntryGateReasons(rawEntry json.RawMessage) []string {
	var e struct {
		Risk      pilotage.Risk   `json:"risk"`
		RiskHints json.RawMessage `json:"risk_hints"`
	}
	if json.Unmarshal(rawEntry, &e) != nil {
		return []string{"the entry does not decode: treated as risky"}
	}
	return GateReasons(&Plan{MaxRisk: e.Risk, MaxRiskHints: e.RiskHints})
}
