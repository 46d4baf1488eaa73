package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
	"github.com/pilothouse/pilothouse/storage"
)

// ExecuteRequest is pilotage_execute's arguments (spec §6.5).
type ExecuteRequest struct {
	Program                json.RawMessage `json:"program,omitempty"`
	ProgramRef             string          `json:"program_ref,omitempty"`
	Input                  json.RawMessage `json:"input,omitempty"`
	Context                json.RawMessage `json:"context,omitempty"`
	TraceLevel             string          `json:"trace_level,omitempty"`
	Store                  *bool           `json:"store,omitempty"`
	ExpectedCatalogVersion string          `json:"expected_catalog_version,omitempty"`
	IdempotencyKey         string          `json:"idempotency_key,omitempty"`
	TestRun                bool            `json:"test_run,omitempty"`
}

// ExecuteResponse is pilotage_execute's result.
type ExecuteResponse struct {
	RunID          string                `json:"run_id"`
	Outcome        pilotage.Outcome      `json:"outcome"`
	Output         any                   `json:"output,omitempty"`
	Trace          *pilotage.Trace       `json:"trace,omitempty"`
	Diagnostics    []pilotage.Diagnostic `json:"diagnostics,omitempty"`
	CatalogVersion string                `json:"catalog_version,omitempty"`
}

// claimTTL bounds how long an in-flight idempotency claim blocks its key if
// the server dies before completing it.
const claimTTL = 5 * time.Minute

// envelope is what a stored run keeps: the facts that rode the response,
// with the trace at the recorded (full) level.
type envelope struct {
	RunID   string           `json:"run_id"`
	Outcome pilotage.Outcome `json:"outcome"`
	Output  any              `json:"output,omitempty"`
	Trace   *pilotage.Trace  `json:"trace,omitempty"`
}

func present(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null"
}

func isNull(raw json.RawMessage) bool { return !present(raw) }

// Execute processes an execute request in the order of spec §6.5.2; the
// first failing check decides the response.
func (e *Engine) Execute(ctx context.Context, req ExecuteRequest) (*ExecuteResponse, error) {
	p := e.principal(ctx)
	recorded := false
	v := e.cat.view(p)
	reqErr := func(kind, msg string) error {
		return &pilotage.RequestError{Kind: kind, Message: msg, CatalogVersion: v.version}
	}

	// 1. Request well-formedness.
	if e.store == nil {
		return nil, reqErr(pilotage.ErrUnsupported, "execute is not available on this server")
	}
	hasProg, hasRef := present(req.Program), req.ProgramRef != ""
	if hasProg == hasRef {
		return nil, reqErr(pilotage.ErrInvalidRequest, "exactly one of program and program_ref is required")
	}
	var promoted *rules.Compiled
	if hasRef {
		en, ok := v.Get(req.ProgramRef)
		if ok && en.Kind == pilotage.KindAutomation {
			promoted, ok = e.automationBody(p, req.ProgramRef)
		}
		if !ok || promoted == nil {
			return nil, reqErr(pilotage.ErrNotFound, "no promoted program with program_ref "+quote(req.ProgramRef))
		}
	}
	level := req.TraceLevel
	switch level {
	case "":
		level = pilotage.LevelFull
	case pilotage.LevelNone, pilotage.LevelSummary, pilotage.LevelFull:
	default:
		return nil, reqErr(pilotage.ErrInvalidRequest, "trace_level must be none, summary or full")
	}
	var idemHash, idemKey string
	if req.IdempotencyKey != "" {
		idemKey = p.Name + "\x00" + req.IdempotencyKey
		idemHash = runnableHash(req)
		rec, claimed, err := e.store.ClaimIdem(ctx, storage.Idem{Key: idemKey, Principal: p.Name, Hash: idemHash, Expires: e.Now().Add(claimTTL)})
		switch {
		case errors.Is(err, storage.ErrConflict):
			return nil, reqErr(pilotage.ErrConflict, "idempotency_key was already used with a different program, program_ref or input")
		case err != nil:
			return nil, fmt.Errorf("engine: claiming idempotency key: %w", err)
		case !claimed && rec.Envelope == nil:
			return nil, reqErr(pilotage.ErrConflict, "a request with this idempotency_key is still being processed")
		case !claimed:
			var resp ExecuteResponse
			if err := json.Unmarshal(rec.Envelope, &resp); err != nil {
				return nil, fmt.Errorf("engine: decoding recorded result: %w", err)
			}
			return &resp, nil
		}
		// Refused runs and failures release the claim: only started runs
		// are recorded for replay.
		defer func() {
			if !recorded {
				if err := e.store.DeleteIdem(context.WithoutCancel(ctx), idemKey); err != nil {
					e.log.Warn("releasing idempotency key", "err", err)
				}
			}
		}()
	}
	runID := storage.NewRunID()
	refused := func(status, msg string, diags []pilotage.Diagnostic) *ExecuteResponse {
		return &ExecuteResponse{RunID: runID, Outcome: pilotage.Outcome{OK: false, Status: status, Error: msg}, Diagnostics: diags, CatalogVersion: v.version}
	}

	// 2. Catalog drift.
	if req.ExpectedCatalogVersion != "" && req.ExpectedCatalogVersion != v.version {
		return refused(rules.StatusCatalogDrift, "catalog version mismatch", nil), nil
	}

	// 3. Re-validation, or the promotion baseline.
	compiled := promoted
	if hasProg {
		res, c, err := e.validate(p, req.Program, req.Context)
		if err != nil {
			return nil, err
		}
		if !res.Valid {
			return refused(rules.StatusValidationError, "the program is invalid", res.Diagnostics), nil
		}
		compiled = c
	} else {
		if d := e.baselineDrift(p, req.ProgramRef); d != "" {
			return refused(rules.StatusPromotionDrift, d, nil), nil
		}
		if present(req.Context) {
			return refused(rules.StatusValidationError, "context is not accepted", []pilotage.Diagnostic{{
				Code: "context_binding", Severity: pilotage.SeverityError, Path: "",
				Message: "automation/1 declares no context_schema: omit context"}}), nil
		}
	}

	// 4. Input binding.
	params, scenario, diags := bindInput(compiled, req.Input, req.TestRun)
	if len(diags) > 0 {
		return refused(rules.StatusValidationError, "input does not bind to the program's params", diags), nil
	}

	// 5. Execution.
	var resp *ExecuteResponse
	var err error
	if req.TestRun {
		resp, err = e.testRun(ctx, p, runID, compiled, params, scenario, req)
	} else {
		resp, err = e.deploy(ctx, p, runID, compiled, params, req)
	}
	if err != nil {
		return nil, err
	}
	resp.CatalogVersion = e.cat.view(p).version
	full := resp.Trace
	resp.Trace = traceAt(full, level)
	stored := req.Store == nil || *req.Store
	if stored {
		env := envelope{RunID: runID, Outcome: resp.Outcome, Output: resp.Output, Trace: full}
		if err := e.storeRun(ctx, p, runID, "", refOf(compiled), kindOf(req), env); err != nil {
			return nil, err
		}
	}
	if idemKey != "" {
		b, _ := json.Marshal(resp)
		if err := e.store.PutIdem(ctx, storage.Idem{Key: idemKey, Principal: p.Name, Hash: idemHash, Envelope: b, Expires: e.Now().Add(e.cfg.Retention)}); err != nil {
			e.log.Warn("recording idempotency key", "err", err)
		} else {
			recorded = true
		}
	}
	return resp, nil
}

func kindOf(req ExecuteRequest) string {
	if req.TestRun {
		return "test"
	}
	return "deploy"
}

func refOf(c *rules.Compiled) string {
	if c == nil || c.Program == nil {
		return ""
	}
	return programRef(c)
}

func traceAt(t *pilotage.Trace, level string) *pilotage.Trace {
	if t == nil || level == pilotage.LevelNone {
		return nil
	}
	if level == pilotage.LevelFull && t.Level == pilotage.LevelFull {
		return t
	}
	out := rules.TraceAt(t.Steps, level)
	if out != nil {
		out.Stats = t.Stats
	}
	return out
}

// runnableHash identifies (runnable, input, test_run) for idempotency.
func runnableHash(req ExecuteRequest) string {
	h := sha256.New()
	if present(req.Program) {
		h.Write([]byte("program\x00"))
		h.Write(canonicalJSON(req.Program))
	} else {
		h.Write([]byte("ref\x00" + req.ProgramRef))
	}
	h.Write([]byte("\x00input\x00"))
	if present(req.Input) {
		h.Write(canonicalJSON(req.Input))
	}
	fmt.Fprintf(h, "\x00test_run=%v", req.TestRun)
	return hex.EncodeToString(h.Sum(nil))
}

// canonicalJSON re-encodes JSON with sorted keys (encoding/json sorts map
// keys), so equal values hash equally.
func canonicalJSON(raw json.RawMessage) []byte {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}

func (e *Engine) storeRun(ctx context.Context, p *Principal, runID, rule, ref, kind string, env envelope) error {
	b, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("engine: encoding run %s: %w", runID, err)
	}
	now := e.Now()
	run := storage.Run{
		ID: runID, Principal: p.Name, Rule: rule, Ref: ref, Kind: kind,
		Status: env.Outcome.Status, OK: env.Outcome.OK, Started: now, Ended: now,
		Level: pilotage.LevelFull, Envelope: b, Expires: now.Add(e.cfg.Retention),
	}
	if err := e.store.InsertRuns(ctx, []storage.Run{run}); err != nil {
		return fmt.Errorf("engine: storing run %s: %w", runID, err)
	}
	return nil
}
