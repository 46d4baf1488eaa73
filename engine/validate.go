package engine

import (
	"context"
	"encoding/json"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// ValidateResponse is pilotage_validate's result (spec §6.4).
type ValidateResponse struct {
	Valid          bool                  `json:"valid"`
	Diagnostics    []pilotage.Diagnostic `json:"diagnostics"`
	CatalogVersion string                `json:"catalog_version"`
	Plan           *pilotage.Plan        `json:"plan,omitempty"`
}

// Validate checks a program against the caller's catalog snapshot. It has no
// side effect. A resource bound exceeded is a request error.
func (e *Engine) Validate(ctx context.Context, program json.RawMessage, context json.RawMessage) (*ValidateResponse, error) {
	p := e.principal(ctx)
	res, c, err := e.validate(p, program, context)
	if err != nil {
		return nil, err
	}
	if d := e.replaceNotice(ctx, p, c); d != nil && res.Valid {
		res.Diagnostics = append(res.Diagnostics, *d)
	}
	if res.Valid {
		res.Plan = e.withNextFires(res.Plan, c)
	}
	return res, nil
}

// validate runs the Language's validator in p's scope.
func (e *Engine) validate(p *Principal, program, ctxRaw json.RawMessage) (*ValidateResponse, *rules.Compiled, error) {
	v := e.cat.View(p)
	opts := rules.ValidateOptions{
		Limits:      e.cfg.Limits,
		Context:     ctxRaw,
		HasLocation: e.cfg.Location != nil,
		Zone:        e.cfg.TimeZone,
		Automation:  func(id string) (*rules.Compiled, bool) { return e.automationBody(p, id) },
		Cache:       e.rules,
		Installed:   e.installed(p),
	}
	res, err := rules.Validate(program, v, opts)
	if err != nil {
		return nil, nil, requestError(err, v.Version())
	}
	out := &ValidateResponse{
		Valid:          res.Valid,
		Diagnostics:    res.Diagnostics,
		CatalogVersion: v.Version(),
		Plan:           res.Plan,
	}
	if out.Diagnostics == nil {
		out.Diagnostics = []pilotage.Diagnostic{}
	}
	return out, res.Compiled, nil
}
