package mcpserver

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

func (s *Server) addTools() {
	s.tool(pilotage.ToolDiscover, "Pilotage discover: returns the manifest (languages, capabilities, where guides, catalog and the loop live). Call this first.",
		discoverIn, discoverOut, annotations("Discover Pilotage manifest", true, false, true, false), s.discover)
	s.tool(pilotage.ToolLearn, "Pilotage learn: without id, the guide index; with id, one guide (start with \"core\"); with id+topic, one section.",
		learnIn, learnOut, annotations("Learn the automation/1 language", true, false, true, false), s.learn)
	s.tool(pilotage.ToolLookup, "Pilotage lookup: the live device catalog (devices, states, events, actions, promoted automations). verb list (kind/tag/q filters, cursor), get (entry + live value; automation.<name> without its @hash gets the current version; with history: {since: \"PT12H\"} a state's recorded changes too, e.g. how often motion triggered last night), changed_since.",
		lookupIn, lookupOut, annotations("Look up devices and actions", true, false, true, false), s.lookup)
	s.tool(pilotage.ToolValidate, "Pilotage validate: check a program against the live catalog; returns closed diagnostics with JSON Pointer paths and, when valid, the risk-labelled plan of the deployed body. No side effect.",
		validateIn, validateOut, annotations("Validate an automation", true, false, true, false), s.validate)
	s.tool(pilotage.ToolExecute, "Pilotage execute: install the program as a rule (deploy), or simulate it with test_run: true (no side effect). Supply expected_catalog_version from validate. Rules can lock doors, open garages and send notifications: gate on the plan's max_risk_hints first.",
		executeIn, executeOut, annotations("Install or test-run an automation", false, true, false, true), s.execute)
	s.tool(pilotage.ToolTrace, "Pilotage trace: fetch a stored run's trace by run_id (deploys, test runs and every firing of installed rules).",
		traceIn, traceOut, annotations("Fetch a run trace", true, false, true, false), s.trace)

	s.tool(pilotage.ToolRules, "List installed rules: status (enabled/disabled/broken), missing (referenced entries not in the catalog now: the rule cannot fire until they are back), triggers, next scheduled time, latest firings with run ids.",
		rulesListIn, rulesListOut, annotations("List installed rules", true, false, true, false), s.rulesList)
	s.tool(pilotage.ToolRuleEnable, "Enable (re-arm) an installed rule by name.",
		ruleNameIn, ruleOut, annotations("Enable a rule", false, false, true, false), s.ruleEnable(true))
	s.tool(pilotage.ToolRuleDisable, "Disable an installed rule by name: it stays installed but no longer fires. Its runs in progress are cancelled (steps not reached, such as turning a light back off, will not run); the answer's cancelled_runs counts them (0 when none were in progress).",
		ruleNameIn, ruleOut, annotations("Disable a rule", false, false, true, false), s.ruleEnable(false))
	s.tool(pilotage.ToolRuleRemove, "Remove (uninstall) a rule by name. Its promoted program versions stay for rollback. Its runs in progress are cancelled (steps not reached will not run); the answer's cancelled_runs counts them (0 when none were in progress).",
		ruleNameIn, ruleOut, annotations("Remove a rule", false, true, true, false), s.ruleRemove)
	s.addHelpersTool()
}

func (s *Server) discover(ctx context.Context, args map[string]json.RawMessage) (any, error) {
	return s.e.Manifest(), nil
}

// GuideMeta is a guide without its body (the index form).
type GuideMeta struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Level     string   `json:"level"`
	Topics    []string `json:"topics,omitempty"`
	Version   string   `json:"version"`
	SizeBytes int      `json:"size_bytes"`
	MediaType string   `json:"media_type"`
	Summary   string   `json:"summary,omitempty"`
}

// GuideBody is a fetched guide.
type GuideBody struct {
	GuideMeta
	Topic string `json:"topic,omitempty"`
	Body  string `json:"body"`
}

func meta(g rules.Guide) GuideMeta {
	return GuideMeta{ID: g.ID, Title: g.Title, Level: g.Level, Topics: g.Topics, Version: g.Version,
		SizeBytes: g.SizeBytes, MediaType: g.MediaType, Summary: g.Summary}
}

func (s *Server) learn(ctx context.Context, args map[string]json.RawMessage) (any, error) {
	if err := checkLanguage(args); err != nil {
		return nil, err
	}
	id, err := str(args, "id")
	if err != nil {
		return nil, err
	}
	topic, err := str(args, "topic")
	if err != nil {
		return nil, err
	}
	if id == "" {
		if topic != "" {
			return nil, pilotage.Errorf(pilotage.ErrInvalidRequest, "topic needs id")
		}
		idx := []GuideMeta{}
		for _, g := range s.e.Guides() {
			idx = append(idx, meta(g))
		}
		return map[string]any{"language": rules.Language, "guides": idx}, nil
	}
	g, ok := s.e.Guide(id)
	if !ok {
		return nil, pilotage.Errorf(pilotage.ErrNotFound, "no guide with id "+shown.Quote(id))
	}
	if topic == "" {
		return GuideBody{GuideMeta: meta(g), Body: g.Body}, nil
	}
	body, ok := s.e.GuideTopic(id, topic)
	if !ok {
		return nil, pilotage.Errorf(pilotage.ErrNotFound, "guide "+shown.Quote(id)+" has no topic "+shown.Quote(topic))
	}
	return GuideBody{GuideMeta: meta(g), Topic: topic, Body: body}, nil
}

func (s *Server) lookup(ctx context.Context, args map[string]json.RawMessage) (any, error) {
	if err := checkLanguage(args); err != nil {
		return nil, err
	}
	var req engine.LookupRequest
	if err := unmarshalArgs(args, &req, "language"); err != nil {
		return nil, err
	}
	return s.e.Lookup(ctx, req)
}

func (s *Server) validate(ctx context.Context, args map[string]json.RawMessage) (any, error) {
	if err := checkLanguage(args); err != nil {
		return nil, err
	}
	prog, ok := args["program"]
	if !ok || string(prog) == "null" {
		return nil, pilotage.Errorf(pilotage.ErrInvalidRequest, "argument \"program\" is required")
	}
	return s.e.Validate(ctx, prog, args["context"])
}

func (s *Server) execute(ctx context.Context, args map[string]json.RawMessage) (any, error) {
	if err := checkLanguage(args); err != nil {
		return nil, err
	}
	var req engine.ExecuteRequest
	prog := args["program"]
	delete(args, "program")
	ctxRaw := args["context"]
	delete(args, "context")
	input := args["input"]
	delete(args, "input")
	if err := unmarshalArgs(args, &req, "language"); err != nil {
		return nil, err
	}
	req.Program, req.Context, req.Input = prog, ctxRaw, input
	return s.e.Execute(s.withAsker(ctx), req)
}

func (s *Server) trace(ctx context.Context, args map[string]json.RawMessage) (any, error) {
	// language is optional here (the binding's trace takes none), but a
	// client that sends it to every pilotage tool is not refused for it.
	if _, ok := args["language"]; ok {
		if err := checkLanguage(args); err != nil {
			return nil, err
		}
	}
	var req engine.TraceRequest
	if err := unmarshalArgs(args, &req, "language"); err != nil {
		return nil, err
	}
	return s.e.Trace(ctx, req)
}

func (s *Server) rulesList(ctx context.Context, args map[string]json.RawMessage) (any, error) {
	var req struct {
		LastFirings *int `json:"last_firings"`
	}
	if err := unmarshalArgs(args, &req); err != nil {
		return nil, err
	}
	n := 5
	if req.LastFirings != nil {
		if *req.LastFirings < 0 || *req.LastFirings > 50 {
			return nil, pilotage.Errorf(pilotage.ErrInvalidRequest, "last_firings must be 0..50")
		}
		n = *req.LastFirings
	}
	list, err := s.e.ListRules(ctx, n)
	if err != nil {
		return nil, err
	}
	return map[string]any{"rules": list}, nil
}

func ruleName(args map[string]json.RawMessage) (string, error) {
	n, err := str(args, "name")
	if err != nil {
		return "", err
	}
	if n == "" {
		return "", pilotage.Errorf(pilotage.ErrInvalidRequest, "argument \"name\" is required")
	}
	return n, nil
}

func notFoundRule(err error) error {
	switch {
	case errors.Is(err, engine.ErrRuleNotFound):
		return pilotage.Errorf(pilotage.ErrNotFound, "no installed rule with that name")
	case errors.Is(err, engine.ErrNotAllowed):
		return pilotage.Errorf(pilotage.ErrInvalidRequest, "this principal may not enable, disable or remove rules")
	}
	return err
}

func (s *Server) ruleEnable(on bool) func(context.Context, map[string]json.RawMessage) (any, error) {
	return func(ctx context.Context, args map[string]json.RawMessage) (any, error) {
		name, err := ruleName(args)
		if err != nil {
			return nil, err
		}
		ri, err := s.e.SetRuleEnabled(ctx, name, on)
		if err != nil {
			return nil, notFoundRule(err)
		}
		if on {
			return map[string]any{"rule": ri}, nil
		}
		// The count is there when nothing was cancelled too, so "none" reads
		// as an answer rather than as a count left out.
		return map[string]any{"rule": ri, "cancelled_runs": ri.CancelledRuns}, nil
	}
}

func (s *Server) ruleRemove(ctx context.Context, args map[string]json.RawMessage) (any, error) {
	name, err := ruleName(args)
	if err != nil {
		return nil, err
	}
	cancelled, err := s.e.RemoveRule(ctx, name)
	if err != nil {
		return nil, notFoundRule(err)
	}
	out := map[string]any{"removed": name, "cancelled_runs": cancelled}
	if cancelled > 0 {
		out["note"] = engine.CancelledNote(cancelled)
	}
	return out, nil
}

// unmarshalArgs decodes members into a typed request, naming the field on
// a type mismatch; skip lists members already handled.
func unmarshalArgs(args map[string]json.RawMessage, into any, skip ...string) error {
	m := map[string]json.RawMessage{}
	for k, v := range args {
		m[k] = v
	}
	for _, k := range skip {
		delete(m, k)
	}
	b, _ := json.Marshal(m)
	if err := json.Unmarshal(b, into); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return pilotage.Errorf(pilotage.ErrInvalidRequest, "argument "+shown.Quote(te.Field)+" has the wrong type (want "+te.Type.String()+")")
		}
		return pilotage.Errorf(pilotage.ErrInvalidRequest, "arguments do not decode: "+err.Error())
	}
	return nil
}
