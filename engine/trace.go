package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
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
	env, err := decodeStored(run.Envelope)
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
	resp.Narration = narrate(run, &env.envelope, req.Question, e.cfg.TimeZone)
	return resp, nil
}

// storedEnvelope is a stored envelope whose values (the output, each
// step's input and output) stay as they were stored, not decoded: decoding
// megabytes of values into maps and encoding them again cost several times
// the record per read.
type storedEnvelope struct {
	envelope
	Output json.RawMessage `json:"output,omitempty"`
}

type storedStep struct {
	pilotage.TraceStep
	Input  json.RawMessage `json:"input,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
}

func decodeStored(b []byte) (*storedEnvelope, error) {
	var env struct {
		storedEnvelope
		Trace *struct {
			Level string         `json:"level"`
			Steps []storedStep   `json:"steps"`
			Stats map[string]any `json:"stats,omitempty"`
		} `json:"trace,omitempty"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, err
	}
	out := &env.storedEnvelope
	if t := env.Trace; t != nil {
		out.Trace = &pilotage.Trace{Level: t.Level, Stats: t.Stats, Steps: make([]pilotage.TraceStep, len(t.Steps))}
		for i, st := range t.Steps {
			out.Trace.Steps[i] = st.TraceStep
			if len(st.Input) > 0 {
				out.Trace.Steps[i].Input = st.Input
			}
			if len(st.Output) > 0 {
				out.Trace.Steps[i].Output = st.Output
			}
		}
	}
	return out, nil
}

// narrate is a deterministic, fact-based summary of a stored run: it only
// restates the envelope (no model, no guessing), in sentences: `Rule
// "hall" fired at 2026-01-15 07:00:00 CET (run r1). Trigger "motion"
// fired because …. The run succeeded. It called hall_light.set (step
// "on"). The trace has 3 steps.` Times are in the server's zone.
func narrate(run storage.Run, env *envelope, question string, zone *time.Location) string {
	var b strings.Builder
	at := run.Started.In(zoneOr(zone)).Format("2006-01-02 15:04:05 MST")
	switch {
	case run.Kind == "firing":
		fmt.Fprintf(&b, "Rule %s fired at %s (run %s).", quote(run.Rule), at, run.ID)
	case run.Kind == "deploy" && run.Rule != "":
		fmt.Fprintf(&b, "An installation of rule %s started at %s (run %s).", quote(run.Rule), at, run.ID)
	case run.Kind == "deploy":
		fmt.Fprintf(&b, "An installation started at %s (run %s).", at, run.ID)
	case run.Kind == "test":
		fmt.Fprintf(&b, "A test run started at %s (run %s).", at, run.ID)
	default:
		fmt.Fprintf(&b, "Run %s started at %s.", run.ID, at)
	}
	if env.Trace != nil {
		narrateDecisions(&b, env.Trace)
	}
	b.WriteString(" " + rules.OutcomeSentence(env.Outcome.Status, env.Outcome.Error))
	if env.Trace != nil {
		narrateSteps(&b, env.Trace, run.Kind)
	}
	if question != "" {
		b.WriteString(" (The narration restates recorded facts only; it does not answer free-form questions beyond them.)")
	}
	return b.String()
}

func zoneOr(z *time.Location) *time.Location {
	if z == nil {
		return time.UTC
	}
	return z
}

// narrateDecisions says which trigger fired and which conditions failed.
func narrateDecisions(b *strings.Builder, t *pilotage.Trace) {
	for _, s := range t.Steps {
		for _, d := range s.Decisions {
			if d.At != rules.TriggersStepID {
				continue
			}
			fmt.Fprintf(b, " Trigger %s fired", quote(d.Took))
			if d.Because != "" {
				b.WriteString(" because " + strings.TrimSuffix(d.Because, "."))
			}
			b.WriteString(".")
		}
		if s.Outcome.Status == rules.StepNotMet {
			fmt.Fprintf(b, " Condition %s was not met.", quote(s.ID))
		}
	}
}

// narrateSteps says what was called (a test run only simulates), which
// steps did not succeed, and how long the trace is.
func narrateSteps(b *strings.Builder, t *pilotage.Trace, kind string) {
	var calls []string
	for _, s := range t.Steps {
		if len(s.Calls) > 0 && s.Outcome.OK {
			calls = append(calls, fmt.Sprintf("%s (step %s)", rules.JoinList(s.Calls, "and"), quote(s.ID)))
		}
	}
	called, none := "It called ", "It called nothing."
	switch kind {
	case "test":
		called, none = "It would have called ", "It would have called nothing."
	case "deploy":
		none = ""
	}
	switch {
	case len(calls) > 0:
		b.WriteString(" " + called + rules.JoinList(calls, "and") + ".")
	case none != "":
		b.WriteString(" " + none)
	}
	for _, s := range t.Steps {
		if !s.Outcome.OK {
			b.WriteString(" " + rules.StepSentence(s.ID, s.Outcome.Status, s.Outcome.Error))
		}
	}
	fmt.Fprintf(b, " The trace has %s.", rules.Plural(len(t.Steps), "step", ""))
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
