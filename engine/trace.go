package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

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
	run, err := e.retainedRun(ctx, p, req.RunID)
	if err != nil {
		return nil, err
	}
	// The output is passed on as it was stored, not decoded.
	var env struct {
		envelope
		Output json.RawMessage `json:"output,omitempty"`
	}
	if err := json.Unmarshal(run.Envelope, &env); err != nil {
		return nil, fmt.Errorf("engine: decoding run %s: %w", run.ID, err)
	}
	if run.Level == pilotage.LevelSummary {
		level = pilotage.LevelSummary
	}
	resp := &pilotage.TraceResponse{RunID: env.RunID, Outcome: env.Outcome, Output: env.Output, Trace: traceAt(env.Trace, level)}
	if resp.Trace == nil {
		resp.Trace = &pilotage.Trace{Level: level, Steps: []pilotage.TraceStep{}}
	}
	resp.Narration = narrate(run, &env.envelope, req.Question)
	return resp, nil
}

// narrate is a deterministic, fact-based summary of a stored run: it only
// restates the envelope (no model, no guessing).
func narrate(run storage.Run, env *envelope, question string) string {
	var b strings.Builder
	what := map[string]string{"firing": "Firing of rule " + quote(run.Rule), "deploy": "Installation", "test": "Test run"}[run.Kind]
	if what == "" {
		what = "Run"
	}
	fmt.Fprintf(&b, "%s %s started %s and ended with status %s (ok=%v).", what, run.ID, run.Started.UTC().Format("2006-01-02 15:04:05Z"), env.Outcome.Status, env.Outcome.OK)
	if env.Outcome.Error != "" {
		fmt.Fprintf(&b, " Reason: %s.", strings.TrimSuffix(env.Outcome.Error, "."))
	}
	if env.Trace == nil {
		return b.String()
	}
	var calls, failed []string
	for _, s := range env.Trace.Steps {
		for _, d := range s.Decisions {
			if d.At == "triggers" {
				fmt.Fprintf(&b, " Trigger %s fired (%s).", d.Took, d.Because)
			}
		}
		if s.Outcome.Status == "not_met" {
			fmt.Fprintf(&b, " Condition %s was not met.", s.ID)
		}
		if len(s.Calls) > 0 {
			calls = append(calls, fmt.Sprintf("%s → %s", s.ID, strings.Join(s.Calls, ",")))
		}
		if !s.Outcome.OK {
			failed = append(failed, fmt.Sprintf("%s (%s: %s)", s.ID, s.Outcome.Status, s.Outcome.Error))
		}
	}
	fmt.Fprintf(&b, " %d trace steps", len(env.Trace.Steps))
	if len(calls) > 0 {
		fmt.Fprintf(&b, "; calls: %s", strings.Join(calls, "; "))
	} else {
		b.WriteString("; no calls")
	}
	b.WriteString(".")
	if len(failed) > 0 {
		fmt.Fprintf(&b, " Failed steps: %s.", strings.Join(failed, "; "))
	}
	if question != "" {
		b.WriteString(" (The narration restates recorded facts only; it does not answer free-form questions beyond them.)")
	}
	return b.String()
}

// retainedRun reads a run p may see: runs belong to the principal they ran
// under (an administrator sees every run). Unknown, expired, non-retained
// and other principals' runs are the same not_found (spec §6.6), reached by
// the same path at the same cost: the store compares the principal before
// it reads the envelope, so a foreign run's existence and size do not show
// in the response time.
func (e *Engine) retainedRun(ctx context.Context, p *Principal, id string) (storage.Run, error) {
	notFound := pilotage.Errorf(pilotage.ErrNotFound, "no retained run with that run_id")
	if e.store == nil {
		return storage.Run{}, notFound
	}
	run, err := e.getRunFor(ctx, p, id)
	if errors.Is(err, storage.ErrNotFound) && e.rec != nil && e.rec.pending() {
		// A firing listed from memory (the rule's latest firings) may still
		// wait in the recorder's batch.
		e.rec.flush()
		run, err = e.getRunFor(ctx, p, id)
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
