package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/pilothouse/pilothouse/engine/internal/recorder"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

// TraceRequest is pilotage_trace's arguments.
type TraceRequest struct {
	RunID      string `json:"run_id"`
	TraceLevel string `json:"trace_level,omitempty"`
	Question   string `json:"question,omitempty"`
}

// Trace fetches a stored run. Unknown, expired, non-retained and (unless the
// caller is an administrator) other principals' runs are the same not_found.
func (e *Engine) Trace(ctx context.Context, req TraceRequest) (*pilotage.TraceResponse, error) {
	p := e.principal(ctx)
	level := req.TraceLevel
	switch level {
	case "":
		level = pilotage.LevelFull
	case pilotage.LevelSummary, pilotage.LevelFull:
	case pilotage.LevelNone:
		return nil, pilotage.Errorf(pilotage.ErrInvalidRequest, "trace_level none has no meaning on the fetch door: ask for summary or full")
	default:
		return nil, pilotage.Errorf(pilotage.ErrInvalidRequest, "trace_level must be summary or full")
	}
	if req.RunID == "" {
		return nil, pilotage.Errorf(pilotage.ErrInvalidRequest, "run_id is required")
	}
	release, err := e.holdServed(ctx, p, req.RunID)
	if err != nil {
		return nil, err
	}
	defer release()
	run, err := e.retainedRun(ctx, p, req.RunID, e.getRunFor)
	if err != nil {
		return nil, err
	}
	env, err := recorder.DecodeStored(run.Envelope)
	if err != nil {
		return nil, fmt.Errorf("engine: decoding run %s: %w", run.ID, err)
	}
	if run.Level == pilotage.LevelSummary {
		level = pilotage.LevelSummary
	}
	resp := &pilotage.TraceResponse{RunID: env.RunID, Outcome: env.Outcome, Output: env.Output, Trace: traceAt(env.Trace, level)}
	if resp.Trace == nil {
		resp.Trace = &pilotage.Trace{Level: level, Steps: []pilotage.TraceStep{}}
	}
	resp.Narration = recorder.Narrate(run, &env.Envelope, req.Question, e.cfg.TimeZone)
	return resp, nil
}

// retainedRun reads a run p may see: runs belong to the principal they ran
// under (an administrator sees every run). Unknown, expired, non-retained
// and other principals' runs are the same not_found (spec §6.6), reached by
// the same path at the same cost: the store compares the principal before
// it reads the envelope, so a foreign run's existence and size do not show
// in the response time.
func (e *Engine) retainedRun(ctx context.Context, p *Principal, id string, get func(context.Context, *Principal, string) (storage.Run, error)) (storage.Run, error) {
	notFound := pilotage.Errorf(pilotage.ErrNotFound, "no retained run with that run_id")
	if e.store == nil {
		return storage.Run{}, notFound
	}
	run, err := get(ctx, p, id)
	if errors.Is(err, storage.ErrNotFound) && e.rec != nil && e.rec.Pending() {
		// A firing listed from memory (the rule's latest firings) may still
		// wait in the recorder's batch.
		e.rec.Flush()
		run, err = get(ctx, p, id)
	}
	if errors.Is(err, storage.ErrNotFound) {
		return storage.Run{}, notFound
	}
	if err != nil {
		return storage.Run{}, fmt.Errorf("engine: reading run: %w", err)
	}
	if !run.Expires.IsZero() && !e.Now().Before(run.Expires) {
		return storage.Run{}, notFound
	}
	return run, nil
}

// getRunFor reads run id if p may see it: an administrator any run, anyone
// else only its own (compared in the statement, before the envelope).
func (e *Engine) getRunFor(ctx context.Context, p *Principal, id string) (storage.Run, error) {
	if p.Admin {
		return e.store.GetRun(ctx, id)
	}
	return e.store.GetRunOf(ctx, id, p.Name)
}

// getRunMetaFor is getRunFor without the envelope.
func (e *Engine) getRunMetaFor(ctx context.Context, p *Principal, id string) (storage.Run, error) {
	if p.Admin {
		return e.store.GetRunMeta(ctx, id, "")
	}
	return e.store.GetRunMeta(ctx, id, p.Name)
}
