package mcpserver

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/helpers"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
)

var (
	helpersIn = `{"type":"object","required":["verb"],"properties":{
"verb":{"type":"string","enum":["list","get","create","update","delete"],"description":"list and get: the helpers in your scope; create, update, delete: the owner only"},
"id":{"type":"string","description":"the helper's id (get, delete)"},
"helper":{"type":"object","description":"the definition (create, update): id, kind (flag, number, choice, text, datetime, counter, timer), name, area, tags; number/counter: min, max, step, unit; choice: options; text: max_length; datetime: mode (date, time, datetime); timer: duration (PT10M); initial","required":["id","kind"],"properties":{
"id":{"type":"string"},"kind":{"type":"string","enum":["flag","number","choice","text","datetime","counter","timer"]},"name":{"type":"string"},"area":{"type":"string"},
"tags":{"type":"array","items":{"type":"string"}},"min":{"type":"number"},"max":{"type":"number"},"step":{"type":"number"},"unit":{"type":"string"},
"options":{"type":"array","items":{"type":"string"}},"max_length":{"type":"integer"},"mode":{"type":"string","enum":["date","time","datetime"]},
"duration":{"type":"string"},"initial":{}},"additionalProperties":false}},"additionalProperties":false}`
	helpersOut = withError(`"helpers":{"type":"array"},"helper":{"type":"object"},"deleted":{"type":"string"},"entries":{"type":"array"}`)
)

func (s *Server) addHelpersTool() {
	s.tool(pilotage.ToolHelpers, "Household helpers: state the house keeps beside its devices (vacation mode flag, a counter, a kitchen timer). Each is a device of type helper in the catalog: <id>.state, actions <id>.<verb> (turn_on, set, increment, start…), a timer's events <id>.finished and <id>.cancelled; rules read and call them like any entry. verb list/get shows those in your scope; create/update/delete is for the owner. No tool sets a helper's value by hand (execute deploys or test-runs; people use the helper's device page in the web UI): to try a rule with a value, give it in a test run's scenario, e.g. \"input\": {\"scenario\": {\"state\": {\"alarm_mode.state\": \"armed_away\"}}}.",
		helpersIn, helpersOut, annotations("Manage household helpers", false, true, true, false), s.helpersCall)
}

func (s *Server) helpersCall(ctx context.Context, args map[string]json.RawMessage) (any, error) {
	verb, err := str(args, "verb")
	if err != nil {
		return nil, err
	}
	id, err := str(args, "id")
	if err != nil {
		return nil, err
	}
	switch verb {
	case "list":
		return map[string]any{"helpers": orEmpty(s.e.Helpers(ctx))}, nil
	case "get":
		for _, h := range s.e.Helpers(ctx) {
			if h.Def.ID == id {
				return map[string]any{"helper": h, "entries": helperEntries(h)}, nil
			}
		}
		return nil, pilotage.Errorf(pilotage.ErrNotFound, "no helper "+shown.Quote(id)+" in your scope")
	case "delete":
		reading := s.e.RulesReading(ctx, id)
		if err := s.e.DeleteHelper(ctx, id); err != nil {
			return nil, helperError(err)
		}
		out := map[string]any{"deleted": id}
		if len(reading) > 0 {
			out["rules_reading_it"] = reading
			out["note"] = "these rules name " + id + ": they fail until a helper of that id is back"
		}
		return out, nil
	case "create", "update":
		return s.putHelper(ctx, verb, args)
	}
	return nil, pilotage.Errorf(pilotage.ErrInvalidRequest, "verb is list, get, create, update or delete")
}

func (s *Server) putHelper(ctx context.Context, verb string, args map[string]json.RawMessage) (any, error) {
	var req struct {
		Helper *helpers.Def `json:"helper"`
	}
	if err := unmarshalArgs(args, &req, "verb", "id"); err != nil {
		return nil, err
	}
	if req.Helper == nil {
		return nil, pilotage.Errorf(pilotage.ErrInvalidRequest, "argument \"helper\" (the definition) is required")
	}
	if !s.e.MayManageHelpers(ctx) {
		return nil, helperError(engine.ErrNotOwner)
	}
	exists := false
	for _, h := range s.e.Helpers(ctx) {
		exists = exists || h.Def.ID == req.Helper.ID
	}
	switch {
	case verb == "create" && exists:
		return nil, pilotage.Errorf(pilotage.ErrConflict, "helper "+shown.Quote(req.Helper.ID)+" exists: use verb update")
	case verb == "update" && !exists:
		return nil, pilotage.Errorf(pilotage.ErrNotFound, "no helper "+shown.Quote(req.Helper.ID)+": use verb create")
	}
	h, err := s.e.PutHelper(ctx, *req.Helper)
	if err != nil {
		return nil, helperError(err)
	}
	return map[string]any{"helper": h, "entries": helperEntries(h)}, nil
}

// helperEntries names the catalog entries of a helper, for the caller's
// next lookup or program.
func helperEntries(h helpers.Info) []string { return h.Def.Entries() }

func orEmpty(hs []helpers.Info) []helpers.Info {
	if hs == nil {
		return []helpers.Info{}
	}
	return hs
}

func helperError(err error) error {
	switch {
	case errors.Is(err, helpers.ErrNotFound):
		return pilotage.Errorf(pilotage.ErrNotFound, err.Error())
	case errors.Is(err, engine.ErrNotOwner), errors.Is(err, engine.ErrHelpersOff), helpers.IsInvalid(err):
		return pilotage.Errorf(pilotage.ErrInvalidRequest, err.Error())
	}
	return err
}
