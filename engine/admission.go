package engine

import (
	"context"

	"github.com/pilothouse/pilothouse/engine/internal/admission"
)

// newAdmission is the engine's gate for test runs (see package admission).
func (e *Engine) newAdmission() *admission.Gate {
	lim := e.cfg.Limits
	return admission.New(admission.Config{MaxStoredRuns: lim.MaxStoredTestRuns, MaxStoredBytes: int64(lim.MaxStoredTestBytes),
		RunBytes: int64(lim.MaxRunBytes), Retention: e.cfg.RetentionText(), Zone: e.cfg.TimeZone,
		Unavailable: func(what, version string) error { return storageRequestError(what, version) }}, e.store, e.log)
}

// holdTest admits a test run: it takes the run's slot and the room it may
// store; anything else passes.
func (e *Engine) holdTest(ctx context.Context, p *Principal, req ExecuteRequest, catalogVersion string) (func(), error) {
	if !req.TestRun {
		return func() {}, nil
	}
	return e.admit.Admit(ctx, admission.Run{Principal: p.Name, Admin: p.Admin, Stores: req.Store == nil || *req.Store,
		Keyed: req.IdempotencyKey != "", CatalogVersion: catalogVersion})
}
