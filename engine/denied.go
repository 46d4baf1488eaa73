package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// Refused requests (deploys and manual runs with status denied) are stored
// like any run, so an operator sees that a principal was refused and why.
// But a refusal costs the caller nothing, and the records are kept for the
// whole retention, so a guest's refusals fill the disk fast (figures:
// docs/performance.md).
// So a principal keeps at most KeepPerStatus (50, as firings per rule and
// status) denied records within the retention; a refusal past them is
// answered as always but not stored (its trace says so), counted on
// /healthz (runs.denied_unstored) and logged. Stored records are never
// deleted early: a run_id once stored stays retrievable for the declared
// retention (spec §6.6).

// errDeniedNotStored: the refusal was not stored (its principal keeps the
// most denied records).
var errDeniedNotStored = errors.New("denied not stored")

// storeRefusable stores a deploy's, manual run's or test run's record
// (rule: the rule a deploy installed), bounding the denied ones per
// principal.
func (e *Engine) storeRefusable(ctx context.Context, p *Principal, runID, rule, ref, kind string, env envelope) error {
	status := env.Outcome.Status
	if status != rules.StatusDenied && status != rules.StatusApprovalPending || kind == storage.KindTest {
		return e.storeRun(ctx, p, runID, rule, ref, kind, env)
	}
	e.deniedMu.Lock()
	defer e.deniedMu.Unlock()
	n, err := e.store.CountRequestRuns(ctx, p.Name, status, e.cfg.KeepPerStatus)
	if err != nil {
		return err
	}
	if n >= e.cfg.KeepPerStatus {
		c := e.deniedUnstored.Add(1)
		if c == 1 || c%1000 == 0 {
			e.log.Warn("a refused request was not stored: the principal keeps the most denied run records", "principal", p.Name,
				"kept", n, "not_stored", c)
		}
		return fmt.Errorf("%w: this refusal was not stored: principal %s already has %d refused requests stored within the retention (%s), the most kept; it is counted in /healthz runs.denied_unstored",
			errDeniedNotStored, shown.Quote(p.Name), n, e.cfg.RetentionText())
	}
	return e.storeRun(ctx, p, runID, rule, ref, kind, env)
}

// noteUnstored says in a trace's stats that its record is not stored.
func noteUnstored(t *pilotage.Trace, why string) {
	if t == nil {
		return
	}
	if t.Stats == nil {
		t.Stats = map[string]any{}
	}
	t.Stats["stored"] = false
	t.Stats["store_error"] = why
}

// RunStats counts the run records the engine did not store, for /healthz.
type RunStats struct {
	DeniedUnstored uint64 `json:"denied_unstored"`
	// LoopsStopped counts the rules disabled because they kept firing
	// themselves (engine/internal/sched/loop.go).
	LoopsStopped uint64 `json:"loops_stopped"`
	// FiringsRefused counts the firings refused because their principal's
	// rules ran or queued limits.max_live_firings_per_principal (an
	// admin's: limits.max_live_firings_admin) at once (sched/caps.go).
	FiringsRefused uint64 `json:"firings_refused"`
}

// RunStats returns the engine's run-record counters.
func (e *Engine) RunStats() RunStats {
	st := RunStats{DeniedUnstored: e.deniedUnstored.Load()}
	if e.sched != nil {
		st.FiringsRefused, st.LoopsStopped = e.sched.Live().Refused(), e.sched.LoopsStopped()
	}
	return st
}
