package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/input"
	"github.com/pilothouse/pilothouse/engine/internal/promoted"
	"github.com/pilothouse/pilothouse/engine/internal/recorder"
	"github.com/pilothouse/pilothouse/internal/shown"
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
	// Once runs the body a single time on the live house as the caller
	// instead of installing it (see runOnce); Confirmed is the risk the
	// caller confirmed for it. Not on the wire: the web UI's controls.
	Once      bool          `json:"-"`
	Confirmed pilotage.Risk `json:"-"`
	// rule is the name of the rule a deploy installs (see instanceName);
	// install is what the input's reserved member "install" asked for.
	rule    string
	install input.Install
}

// target is the name of the rule a deploy of c installs.
func (req ExecuteRequest) target(c *rules.Compiled) string {
	if req.rule != "" {
		return req.rule
	}
	return c.Name()
}

// ExecuteResponse is pilotage_execute's result.
type ExecuteResponse struct {
	RunID          string                `json:"run_id"`
	Outcome        pilotage.Outcome      `json:"outcome"`
	Output         any                   `json:"output,omitempty"`
	Trace          *pilotage.Trace       `json:"trace,omitempty"`
	Diagnostics    []pilotage.Diagnostic `json:"diagnostics,omitempty"`
	CatalogVersion string                `json:"catalog_version,omitempty"`
	// Replayed: this is the recorded response of an earlier request with
	// the same idempotency key, and nothing ran now; FirstAt is when that
	// request's run started. Not on the wire: the web UI's controls say so.
	Replayed bool      `json:"-"`
	FirstAt  time.Time `json:"-"`
	// Approval is the risk gate's request (a deploy answered
	// approval_pending) or the approval a deploy used (see approvals.go).
	Approval *pilotage.Approval `json:"approval,omitempty"`
	// Replaces is the installed rule a deploy answered rule_exists would
	// replace (see replaceCheck).
	Replaces *pilotage.Replaces `json:"replaces,omitempty"`
}

// claimTTL bounds how long an in-flight idempotency claim blocks its key if
// the server dies before completing it.
const claimTTL = 5 * time.Minute

// envelope is what a stored run keeps (the recorder writes firings').
type envelope = recorder.Envelope

// viewError is a request error that carries v's catalog version.
func viewError(v *view, kind, msg string) error {
	return &pilotage.RequestError{Kind: kind, Message: msg, CatalogVersion: v.Version()}
}

// Execute processes an execute request in the order of spec §6.5.2; the
// first failing check decides the response. The answer is charged
// against limits.max_served_run_bytes until it is written (see
// ServingRuns and answer); a test run keeps its admission slot until
// then, so the answers waiting for room are bounded too.
func (e *Engine) Execute(ctx context.Context, req ExecuteRequest) (*ExecuteResponse, error) {
	slot := func() {}
	defer func() { slot() }()
	resp, err := e.execute(ctx, req, &slot)
	if err != nil || resp == nil {
		return resp, err
	}
	return e.answer(ctx, req, resp)
}

// answer takes room for resp until it is written. With none free within
// the wait, a test run (it had no side effect) becomes a request error to
// retry; any other answer's outcome stands and goes out with its trace
// cut to the summary (no step inputs, outputs cut short).
func (e *Engine) answer(ctx context.Context, req ExecuteRequest, resp *ExecuteResponse) (*ExecuteResponse, error) {
	p := e.principal(ctx)
	release, err := e.holdAnswer(ctx, p, resp)
	switch {
	case err == nil:
		defer release() // a no-op under ServingRuns: its done gives it back
		return resp, nil
	case req.TestRun:
		var re *pilotage.RequestError
		if errors.As(err, &re) && (req.Store == nil || *req.Store) && !resp.Replayed {
			re.Message += "; the test run ran and was stored: read it with pilotage_trace, run_id " + resp.RunID
		}
		return nil, err
	}
	e.log.Warn("an execute answer found no room under limits.max_served_run_bytes; its trace is cut to the summary", "run", resp.RunID, "principal", p.Name)
	cut := *resp
	cut.Trace = traceAt(resp.Trace, pilotage.LevelSummary)
	return &cut, nil
}

// execute is Execute before its answer is charged; a test run's admission
// slot is handed to slot, for Execute to give back.
func (e *Engine) execute(ctx context.Context, req ExecuteRequest, slot *func()) (*ExecuteResponse, error) {
	p := e.principal(ctx)
	v := e.cat.View(p)
	reqErr := func(kind, msg string) error { return viewError(v, kind, msg) }

	// 1. Request well-formedness.
	promoted, level, err := e.checkRequest(p, v, req, reqErr)
	if err != nil {
		return nil, err
	}
	release, err := e.holdTest(ctx, p, req, v.Version())
	if err != nil {
		return nil, err
	}
	*slot = release
	idem, replay, err := e.claimIdem(ctx, p, v, req, reqErr)
	if err != nil || replay != nil {
		return replay, err
	}
	// Refused runs and failures release the claim: only started runs
	// are recorded for replay.
	defer idem.release(ctx)
	runID := storage.NewRunID()
	refused := func(status, msg string, diags []pilotage.Diagnostic) *ExecuteResponse {
		return &ExecuteResponse{RunID: runID, Outcome: pilotage.Outcome{OK: false, Status: status, Error: msg}, Diagnostics: diags, CatalogVersion: v.Version()}
	}

	// 2. Catalog drift.
	if req.ExpectedCatalogVersion != "" && req.ExpectedCatalogVersion != v.Version() {
		return refused(rules.StatusCatalogDrift, driftMessage(req.ExpectedCatalogVersion, v.Version()), nil), nil
	}

	// 3. Re-validation, or the promotion baseline.
	compiled, warnings, refusal, err := e.runnable(p, req, promoted, refused)
	if err != nil || refusal != nil {
		return refusal, err
	}

	// 4. Input binding.
	bnd, params, scenario, inst, diags, err := e.bindRequest(p, compiled, warnings, req)
	if err != nil {
		return nil, err
	}
	req.install = inst
	if len(diags) > 0 {
		return refused(rules.StatusValidationError, "input does not bind to the program's params", diags), nil
	}

	// 5. Execution.
	resp, err := e.execution(ctx, p, runID, compiled, bnd, params, scenario, req)
	if err != nil {
		return nil, err
	}
	resp.CatalogVersion = e.cat.View(p).Version()
	if err := e.record(ctx, p, runID, compiled, req, resp, level); err != nil {
		return nil, err
	}
	idem.complete(ctx, resp)
	return resp, nil
}

// driftMessage is catalog_drift's error: what the version follows, and how
// to get the current one (the answer's catalog_version is it).
func driftMessage(expected, now string) string {
	return fmt.Sprintf("catalog version mismatch: expected_catalog_version %q is not the catalog's now (%q). "+
		"The version changes whenever a device, an entry or an installed rule changes (every deploy adds its automation entry), "+
		"not only the entries your program uses: validate again (or pilotage_lookup) for the current version and its plan, "+
		"then send the request with it", expected, now)
}

// bindRequest is step 4 of execute: the params against their schema,
// then the program as it will run with them. warnings are the program's
// own (runnable's): those of a program without params are its bound
// program's too.
func (e *Engine) bindRequest(p *Principal, c *rules.Compiled, warnings []pilotage.Diagnostic, req ExecuteRequest) (*bound, map[string]any, *rules.Scenario, input.Install, []pilotage.Diagnostic, error) {
	params, scenario, inst, diags := e.inputOf(p, c, req)
	if len(diags) > 0 {
		return nil, params, scenario, inst, diags, nil
	}
	b, diags, err := e.bind(p, c, params)
	if b != nil && len(c.Params()) == 0 { // else bind's are the bound program's own
		b.warnings = warnings
	}
	return b, params, scenario, inst, diags, err
}

// execution is step 5 of execute: a test run, a manual run or a deploy.
// c is the program as validated, b the program bound to params (what
// runs).
func (e *Engine) execution(ctx context.Context, p *Principal, runID string, c *rules.Compiled, b *bound, params map[string]any, sc *rules.Scenario, req ExecuteRequest) (*ExecuteResponse, error) {
	switch {
	case req.TestRun:
		resp, err := e.testRun(ctx, p, runID, b.c, params, sc, req)
		if out, ok := outputMap(resp); ok && b.refs {
			out["plan"] = b.c.Plan // what a deploy with this input installs
		}
		if out, ok := outputMap(resp); ok && len(b.warnings) > 0 {
			out["warnings"] = b.warnings // validate's (no_match): a run that calls nothing says why
		}
		return resp, err
	case req.Once:
		return e.runOnce(ctx, p, runID, b.c, params, req.Confirmed), nil
	}
	if !p.Deploy {
		return e.deploy(ctx, p, runID, c, b, params, req) // refused: denied
	}
	req.rule = req.install.Rule
	if req.rule == "" {
		req.rule = e.instanceName(ctx, p, c, params)
	}
	if same := e.unchangedDeploy(ctx, p, runID, req.rule, c, b, params); same != nil {
		return same, nil
	}
	if refusal := e.lookAlikeCheck(ctx, runID, req.rule, p); refusal != nil {
		return refusal, nil
	}
	if refusal, err := e.replaceCheck(ctx, p, runID, req.rule, c, params, req.install.Replace); err != nil || refusal != nil {
		return refusal, err
	}
	used, refusal, err := e.gate(ctx, p, runID, req.rule, c, b, params)
	if err != nil || refusal != nil {
		return refusal, err
	}
	resp, err := e.deploy(ctx, p, runID, c, b, params, req)
	if used != nil {
		e.withApproval(resp, used)
	}
	return resp, err
}

func outputMap(resp *ExecuteResponse) (map[string]any, bool) {
	if resp == nil {
		return nil, false
	}
	m, ok := resp.Output.(map[string]any)
	return m, ok
}

// checkRequest checks step 1 of execute: exactly one runnable, a visible
// program_ref, a known trace level.
func (e *Engine) checkRequest(p *Principal, v *view, req ExecuteRequest, reqErr func(kind, msg string) error) (*rules.Compiled, string, error) {
	if e.store == nil {
		return nil, "", reqErr(pilotage.ErrUnsupported, "execute is not available on this server")
	}
	hasProg, hasRef := input.Present(req.Program), req.ProgramRef != ""
	if hasProg == hasRef {
		return nil, "", reqErr(pilotage.ErrInvalidRequest, "exactly one of program and program_ref is required")
	}
	var promoted *rules.Compiled
	if hasRef {
		en, ok := v.Get(req.ProgramRef)
		if ok && en.Kind == pilotage.KindAutomation {
			promoted, ok = e.automationBody(p, req.ProgramRef)
		}
		if !ok || promoted == nil {
			return nil, "", reqErr(pilotage.ErrNotFound, "no promoted program with program_ref "+shown.Quote(req.ProgramRef))
		}
	}
	level := req.TraceLevel
	switch level {
	case "":
		level = pilotage.LevelFull
	case pilotage.LevelNone, pilotage.LevelSummary, pilotage.LevelFull:
	default:
		return nil, "", reqErr(pilotage.ErrInvalidRequest, "trace_level must be none, summary or full")
	}
	return promoted, level, nil
}

// idemClaim is an execute request's claim of its idempotency key (the
// zero value: the request carries none).
type idemClaim struct {
	e         *Engine
	p         *Principal
	key, hash string
	recorded  bool
}

// claimIdem claims the request's idempotency key before the run starts;
// a repeated request gets the recorded response of the first.
func (e *Engine) claimIdem(ctx context.Context, p *Principal, v *view, req ExecuteRequest, reqErr func(kind, msg string) error) (*idemClaim, *ExecuteResponse, error) {
	c := &idemClaim{e: e, p: p}
	if req.IdempotencyKey == "" {
		return c, nil, nil
	}
	c.key, c.hash = p.Name+"\x00"+req.IdempotencyKey, runnableHash(req)
	rec, claimed, err := e.store.ClaimIdem(ctx, storage.Idem{Key: c.key, Principal: p.Name, Hash: c.hash, Expires: e.Now().Add(claimTTL)})
	switch {
	case errors.Is(err, storage.ErrConflict):
		return nil, nil, reqErr(pilotage.ErrConflict, "idempotency_key was already used with a different program, program_ref or input")
	case errors.Is(err, storage.ErrUnavailable):
		e.log.Warn("claiming an idempotency key failed; nothing ran", "err", err)
		return nil, nil, storageRequestError("the idempotency_key could not be recorded, so nothing ran", v.Version())
	case err != nil:
		return nil, nil, fmt.Errorf("engine: claiming idempotency key: %w", err)
	case !claimed && rec.Envelope == nil:
		return nil, nil, reqErr(pilotage.ErrConflict, "a request with this idempotency_key is still being processed")
	case !claimed:
		var resp ExecuteResponse
		if err := json.Unmarshal(rec.Envelope, &resp); err != nil {
			return nil, nil, fmt.Errorf("engine: decoding recorded result: %w", err)
		}
		resp.Replayed = true
		resp.FirstAt, _ = storage.RunIDTime(resp.RunID)
		return nil, &resp, nil
	}
	return c, nil, nil
}

// complete records resp for replay under the claimed key; a deploy held
// for approval is not recorded, so that the retry after approval runs.
func (c *idemClaim) complete(ctx context.Context, resp *ExecuteResponse) {
	if c.key == "" || resp.Outcome.Status == rules.StatusApprovalPending {
		return
	}
	b, _ := json.Marshal(resp)
	if err := c.e.store.PutIdem(ctx, storage.Idem{Key: c.key, Principal: c.p.Name, Hash: c.hash, Envelope: b, Expires: c.e.Now().Add(c.e.cfg.Retention)}); err != nil {
		c.e.log.Warn("recording idempotency key", "err", err)
		return
	}
	c.recorded = true
}

// release forgets a claim whose response was not recorded.
func (c *idemClaim) release(ctx context.Context) {
	if c.key == "" || c.recorded {
		return
	}
	if err := c.e.store.DeleteIdem(context.WithoutCancel(ctx), c.key); err != nil {
		c.e.log.Warn("releasing idempotency key", "err", err)
	}
}

// runnable is step 3 of execute: an inline program is validated again, a
// promoted one is checked against its baseline. warnings are the
// program's non-error findings now (no_match, overlapping_rule), which
// execute's answer carries as validate's did.
func (e *Engine) runnable(p *Principal, req ExecuteRequest, promoted *rules.Compiled, refused func(status, msg string, diags []pilotage.Diagnostic) *ExecuteResponse) (c *rules.Compiled, warnings []pilotage.Diagnostic, _ *ExecuteResponse, _ error) {
	if input.Present(req.Program) {
		res, c, err := e.validate(p, req.Program, req.Context)
		if err != nil {
			return nil, nil, nil, err
		}
		if !res.Valid {
			return nil, nil, refused(rules.StatusValidationError, "the program is invalid", res.Diagnostics), nil
		}
		return c, warningsOf(res.Diagnostics), nil, nil
	}
	if d := e.baselineDrift(p, req.ProgramRef); d != "" {
		return nil, nil, refused(rules.StatusPromotionDrift, d, nil), nil
	}
	if input.Present(req.Context) {
		return nil, nil, refused(rules.StatusValidationError, "context is not accepted", []pilotage.Diagnostic{{
			Code: rules.CodeContextBinding, Severity: pilotage.SeverityError, Path: "",
			Message: "automation/1 declares no context_schema: omit context"}}), nil
	}
	if len(promoted.Params()) == 0 { // a program with params: bind finds its warnings
		if res, _, err := e.validate(p, promoted.Raw, nil); err == nil {
			warnings = warningsOf(res.Diagnostics)
		}
	}
	return promoted, warnings, nil, nil
}

// record stores the run (unless store is false) and cuts the inline trace
// to the effective level. When storage cannot write, a test run (it had no
// side effect) becomes a request error to retry; a deploy's outcome stands
// (its rule is installed, or nothing is) and its trace says that the
// record is missing.
func (e *Engine) record(ctx context.Context, p *Principal, runID string, compiled *rules.Compiled, req ExecuteRequest, resp *ExecuteResponse, level string) error {
	full := resp.Trace
	if req.Store == nil || *req.Store {
		env := envelope{RunID: runID, Outcome: resp.Outcome, Output: resp.Output, Trace: full}
		err := e.storeRefusable(ctx, p, runID, installedRule(resp), refOf(compiled), kindOf(req), env)
		switch {
		case errors.Is(err, errDeniedNotStored):
			noteUnstored(full, err.Error())
		case err == nil:
		case !errors.Is(err, storage.ErrUnavailable):
			return err
		case req.TestRun:
			e.log.Warn("storing a test run failed", "run", runID, "err", err)
			return storageRequestError("the test run could not be stored (it had no side effect; retry, or pass store: false)", resp.CatalogVersion)
		default:
			e.log.Warn("storing a deploy's run record failed; pilotage_trace will not find it", "run", runID, "err", err)
			noteUnstored(full, "the run record could not be stored: pilotage_trace will not find "+runID)
		}
	}
	resp.Trace = traceAt(full, level)
	return nil
}

// installedRule is the rule a deploy installed, or would install once
// approved ("" for any other run), so its run record is listed under that
// rule like the rule's firings.
func installedRule(resp *ExecuteResponse) string {
	if out, ok := resp.Output.(*pilotage.DeployOutput); ok && out != nil {
		return out.Rule
	}
	if a := resp.Approval; a != nil && resp.Outcome.Status == rules.StatusApprovalPending {
		return a.Rule // the rule it would install, once approved
	}
	return ""
}

// storageRequestError is the request error of an operation storage could
// not serve: nothing was changed, and a retry may succeed.
func storageRequestError(what, catalogVersion string) *pilotage.RequestError {
	return &pilotage.RequestError{Kind: pilotage.ErrResourceExhausted, CatalogVersion: catalogVersion,
		Message: what + ": storage is unavailable (the server log and /healthz say why); retry later"}
}

// StorageRequestError turns a storage failure (storage.ErrUnavailable)
// into the request error a transport returns for it; nil for any other
// error. Nothing was changed: every change is stored before it is applied.
func StorageRequestError(err error) *pilotage.RequestError {
	if !errors.Is(err, storage.ErrUnavailable) {
		return nil
	}
	return storageRequestError("the request could not be served, nothing was changed", "")
}

func kindOf(req ExecuteRequest) string {
	if req.TestRun {
		return "test"
	}
	if req.Once {
		return storage.KindManual
	}
	return "deploy"
}

func refOf(c *rules.Compiled) string {
	if c == nil {
		return ""
	}
	return promoted.Ref(c)
}

func traceAt(t *pilotage.Trace, level string) *pilotage.Trace {
	if t == nil || level == pilotage.LevelNone {
		return nil
	}
	if level == pilotage.LevelFull && t.Level == pilotage.LevelFull {
		return readable(t)
	}
	out := rules.TraceAt(t.Steps, level)
	if out != nil {
		out.Stats = t.Stats
	}
	return readable(out)
}

// runnableHash identifies (runnable, input, test_run) for idempotency.
func runnableHash(req ExecuteRequest) string {
	h := sha256.New()
	if input.Present(req.Program) {
		h.Write([]byte("program\x00"))
		h.Write(pilotage.CanonicalJSON(req.Program))
	} else {
		h.Write([]byte("ref\x00" + req.ProgramRef))
	}
	h.Write([]byte("\x00input\x00"))
	if input.Present(req.Input) {
		h.Write(pilotage.CanonicalJSON(req.Input))
	}
	fmt.Fprintf(h, "\x00test_run=%v", req.TestRun)
	if req.Once {
		h.Write([]byte("\x00once"))
	}
	return hex.EncodeToString(h.Sum(nil))
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
