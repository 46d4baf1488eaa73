package decode

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// Decode parses an automation/1 program. Every finding about the text
// (syntax, shape, types, expressions, durations, cron specs, ids) is a
// diagnostic located by JSON Pointer; catalog references are checked by
// Validate. The *Program is nil only when the text is not a JSON object; it
// may be partial when there are errors. Exceeding a bound of lim returns a
// *pilotage.RequestError of kind resource_exhausted.
func Decode(raw []byte, lim core.Limits) (*model.Program, []pilotage.Diagnostic, error) {
	lim = lim.WithDefaults()
	dc := NewDecoder(lim, time.Now().Add(lim.ValidateWall), nil)
	p, err := dc.Decode(raw)
	if err != nil {
		return nil, nil, err
	}
	return p, dc.Diags.List, nil
}

type decoder struct {
	lim      core.Limits
	cache    *model.Cache // nil: nothing reused
	deadline time.Time
	Diags    core.Diags
	fatal    error
	IDs      map[string]string // id → pointer of its first use
	curStr   string            // the string value being compiled (for ranges)
	Strs     map[string]string // pointer → string value holding expressions
}

// NewDecoder makes a decoder bounded by lim and deadline.
func NewDecoder(lim core.Limits, deadline time.Time, cache *model.Cache) *decoder {
	return &decoder{lim: lim, cache: cache, deadline: deadline, IDs: map[string]string{}, Strs: map[string]string{}}
}

// Exhausted is the request error of a program past a bound.
func Exhausted(msg string) *pilotage.RequestError {
	return pilotage.Errorf(pilotage.ErrResourceExhausted, msg)
}

// Decode parses raw into a Program, recording findings in dc.Diags.
func (dc *decoder) Decode(raw []byte) (*model.Program, error) {
	if len(raw) > dc.lim.MaxProgramBytes {
		return nil, Exhausted(fmt.Sprintf("program is %d bytes, more than the bound of %d", len(raw), dc.lim.MaxProgramBytes))
	}
	root, dups, err := core.ParseJSON(raw, dc.lim.MaxNodes, jsonDepth(dc.lim), dc.deadline)
	var se *core.JSONSyntaxError
	var le *core.InputLimitError
	switch {
	case errors.As(err, &le):
		return nil, Exhausted(le.Msg)
	case errors.As(err, &se):
		line, col := core.LineCol(raw, se.Off)
		g := dc.Diags.Add(core.CodeSyntax, "", "", "line %d, column %d: %s", line, col, se.Msg)
		pos := pilotage.Position{Line: line, Column: col}
		g.Range = &pilotage.Range{Start: pos, End: pilotage.Position{Line: line, Column: col + 1}}
		return nil, nil
	case err != nil:
		return nil, err
	}
	for _, ptr := range dups {
		dc.Diags.Add(core.CodeDuplicateKey, ptr, "", "member %q appears twice in the same object", lastToken(ptr))
	}
	p := dc.program(root)
	if dc.fatal != nil {
		return nil, dc.fatal
	}
	return p, nil
}

// jsonDepth bounds raw JSON nesting: enough for MaxDepth nested steps (each
// costs about four levels) plus params schemas and argument values.
func jsonDepth(l core.Limits) int { return 4*l.MaxDepth + 32 }

func lastToken(ptr string) string {
	t := ptr[strings.LastIndexByte(ptr, '/')+1:]
	return strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
}

func (dc *decoder) checkTime() bool {
	if dc.fatal != nil {
		return false
	}
	if time.Now().After(dc.deadline) {
		dc.fatal = Exhausted("validation exceeded its wall-time bound of " + dc.lim.ValidateWall.String())
		return false
	}
	return true
}

var programFields = []string{"name", "description", "mode", "max", "throttle", "params", "triggers", "conditions", "steps"}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$`)

func (dc *decoder) program(n *core.JNode) *model.Program {
	if n.Kind != core.JObj {
		dc.Diags.Add(core.CodeTypeMismatch, "", "", "a program is a JSON object, got %s", n.Kind)
		return nil
	}
	dc.fields(n, "program", programFields)
	p := &model.Program{Mode: model.ModeSingle}
	if v := dc.required(n, "name", "program"); v != nil {
		if s, ok := dc.str(v, "name"); ok {
			p.Name = s
			if !nameRE.MatchString(s) {
				dc.Diags.Add(core.CodeInvalidID, v.Ptr, "use letters, digits, '_', '-' or '.', e.g. \"hall-motion-light\"", "name %q is not id-like (1-64 of A-Z a-z 0-9 _ - ., starting with a letter or digit)", s)
			}
		}
	}
	if v := n.Get("description"); v != nil {
		p.Description, _ = dc.str(v, "description")
	}
	dc.mode(n, p)
	if v := n.Get("throttle"); v != nil {
		p.Throttle = dc.constDuration(v, "throttle", false)
	}
	if v := n.Get("params"); v != nil {
		if p.Params = dc.params(v); p.Params != nil {
			dc.paramDefaults(v)
			p.RefParams = model.ParseRefParams(v.Value(), v.Ptr, func(code, path, hint, format string, args ...any) {
				dc.Diags.Add(code, path, hint, format, args...)
			})
		}
	}
	if v := dc.required(n, "triggers", "program"); v != nil && dc.array(v, "triggers") {
		if len(v.Vals) == 0 {
			dc.Diags.Add(core.CodeMissingField, v.Ptr, "", "a program needs at least one trigger")
		}
		for _, t := range v.Vals {
			if tr := dc.trigger(t); tr != nil {
				p.Triggers = append(p.Triggers, tr)
			}
		}
	}
	if v := n.Get("conditions"); v != nil && dc.array(v, "conditions") {
		for _, c := range v.Vals {
			if cd := dc.condition(c); cd != nil {
				p.Conditions = append(p.Conditions, cd)
			}
		}
	}
	if v := dc.required(n, "steps", "program"); v != nil {
		p.Steps = dc.stepList(v, 1)
		if v.Kind == core.JArr && len(v.Vals) == 0 {
			dc.Diags.Add(core.CodeMissingField, v.Ptr, "", "a program needs at least one step")
		}
	}
	return p
}

func (dc *decoder) mode(n *core.JNode, p *model.Program) {
	if v := n.Get("mode"); v != nil {
		if s, ok := dc.str(v, "mode"); ok {
			switch i := slices.Index(model.Modes, s); {
			case i >= 0:
				p.Mode = model.Modes[i] // the constant: the decoded copy is not kept
			default:
				dc.Diags.Add(core.CodeBadMode, v.Ptr, core.HintFor(core.CloseMatches(s, model.Modes, 1)), "mode %q is not one of single, restart, queued, parallel", s)
			}
		}
	}
	if v := n.Get("max"); v != nil {
		m, ok := dc.integer(v, "max")
		switch {
		case !ok:
		case m < 1:
			dc.Diags.Add(core.CodeBadMode, v.Ptr, "", "max must be at least 1, got %d", m)
		case m > dc.lim.MaxConcurrent:
			dc.Diags.Add(core.CodeBadMode, v.Ptr, fmt.Sprintf("use a max of at most %d", dc.lim.MaxConcurrent),
				"max %d is more than the bound of %d firings of one rule running or queued at once", m, dc.lim.MaxConcurrent)
		case p.Mode != model.ModeQueued && p.Mode != model.ModeParallel:
			dc.Diags.Add(core.CodeBadMode, v.Ptr, "set mode to \"queued\" or \"parallel\", or drop max", "max applies only to mode queued or parallel (mode is %s)", p.Mode)
		default:
			p.Max = m
		}
	}
}

// ReservedInputMember is the execute input member that carries a test-run
// scenario; InstallInputMember the one that names the rule a deploy
// installs and whether it may replace one. Neither is ever a param.
const (
	ReservedInputMember = "scenario"
	InstallInputMember  = "install"
)

// ValidName reports whether s may name a program or a rule.
func ValidName(s string) bool { return nameRE.MatchString(s) }

func (dc *decoder) params(v *core.JNode) json.RawMessage {
	if v.Kind != core.JObj {
		dc.Diags.Add(core.CodeBadParams, v.Ptr, "", "params must be a JSON Schema object, got %s", v.Kind)
		return nil
	}
	if t := v.Get("type"); t != nil && !(t.Kind == core.JStr && t.Str == "object") {
		dc.Diags.Add(core.CodeBadParams, t.Ptr, "", "params describes the program's input object: its type must be \"object\"")
		return nil
	}
	if props := v.Get("properties"); props != nil && props.Kind == core.JObj {
		if sc := props.Get(ReservedInputMember); sc != nil {
			dc.Diags.Add(core.CodeBadParams, sc.Ptr, "rename the parameter", "%q is reserved in execute input for test-run scenarios: a param may not be called so", ReservedInputMember)
			return nil
		}
		if in := props.Get(InstallInputMember); in != nil {
			dc.Diags.Add(core.CodeBadParams, in.Ptr, "rename the parameter", "%q is reserved in execute input for the rule a deploy installs: a param may not be called so", InstallInputMember)
			return nil
		}
	}
	val := v.Value()
	if _, err := model.CompileSchema(val); err != nil {
		dc.Diags.Add(core.CodeBadParams, v.Ptr, "", "params is not a valid JSON Schema: %s", schemaErrText(err))
		return nil
	}
	raw, _ := json.Marshal(val)
	return raw
}

// paramDefaults checks each top-level param's default against the param's
// own schema (formats included): a default that does not fit would fail
// the first run that uses it.
func (dc *decoder) paramDefaults(v *core.JNode) {
	props := v.Get("properties")
	if props == nil || props.Kind != core.JObj {
		return
	}
	doc := v.Value()
	for i, name := range props.Keys {
		p := props.Vals[i]
		def := p.Get("default")
		if p.Kind != core.JObj || def == nil {
			continue
		}
		sch, err := model.CompileSchemaAt(doc, "/properties/"+url.PathEscape(core.EscapePtr(name)))
		if err != nil {
			continue
		}
		if err := sch.Validate(def.Value()); err != nil {
			dc.Diags.Add(core.CodeBadParams, def.Ptr, "", "the default of params.%s does not fit its schema: %s", name, FirstLeafMessage(err))
		}
	}
}

func schemaErrText(err error) string {
	var sve *jsonschema.SchemaValidationError
	if errors.As(err, &sve) {
		err = sve.Err
	}
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		leaves := LeafErrors(ve, nil)
		if len(leaves) > 0 {
			l := leaves[0]
			return fmt.Sprintf("at %q: %s", "/"+strings.Join(l.InstanceLocation, "/"), l.ErrorKind.LocalizedString(Printer))
		}
	}
	return strings.ReplaceAll(err.Error(), "mem:///schema.json", "params")
}

// ---- triggers and conditions ----

func (dc *decoder) kindKey(n *core.JNode, what string, keys []string) (string, bool) {
	var found []string
	for _, k := range keys {
		if n.Get(k) != nil {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 0:
		dc.Diags.Add(core.CodeMissingField, n.Ptr, "", "%s needs one of: %s", what, strings.Join(keys, ", "))
		return "", false
	case 1:
		return found[0], true
	}
	dc.Diags.Add(core.CodeConflictFields, n.Get(found[1]).Ptr, "", "%s has both %q and %q; use exactly one of %s", what, found[0], found[1], strings.Join(keys, ", "))
	return "", false
}

func (dc *decoder) trigger(n *core.JNode) *model.Trigger {
	if !dc.checkTime() || !dc.object(n, "trigger") {
		return nil
	}
	t := &model.Trigger{Ptr: n.Ptr}
	t.ID = dc.id(n)
	key, ok := dc.kindKey(n, "a trigger", model.TriggerKeys)
	if !ok {
		dc.fields(n, "trigger", model.AllTriggerFields)
		return t
	}
	dc.triggerKind(n, t, key)
	row, _ := model.TriggerKindOf(t.Kind)
	allowed := row.Members
	if t.Kind == model.TriggerNumeric {
		allowed = append(allowed[:len(allowed):len(allowed)], "to", "from") // reported as conflicts above
	}
	dc.fields(n, "a "+string(t.Kind)+" trigger", allowed)
	dc.triggerFilters(n, t)
	return t
}

// triggerKind decodes the member that selects t's kind (key) and what
// goes with it.
func (dc *decoder) triggerKind(n *core.JNode, t *model.Trigger, key string) {
	switch key {
	case "state":
		t.Kind = model.TriggerState
		if n.Get("above") != nil || n.Get("below") != nil {
			t.Kind = model.TriggerNumeric
			for _, k := range []string{"to", "from"} {
				if v := n.Get(k); v != nil {
					dc.Diags.Add(core.CodeConflictFields, v.Ptr, "", "a state trigger uses either to/from (state change) or above/below (numeric threshold), not both")
				}
			}
		}
		if v := n.Get("state"); v != nil && v.Kind == core.JObj {
			t.Select = dc.selector(v, "state", model.SelectorMembers.Property)
		} else {
			t.Entity, _ = dc.str(v, "state")
		}
	case "event":
		t.Kind = model.TriggerEvent
		t.Entity, _ = dc.str(n.Get("event"), "event")
	case "cron":
		t.Kind = model.TriggerCron
		dc.cronTrigger(n.Get("cron"), t)
	case "at":
		t.Kind = model.TriggerTime
		dc.timeTrigger(n.Get("at"), t)
	case "sun":
		t.Kind = model.TriggerSun
		dc.sunTrigger(n, t)
	case "available":
		t.Kind = model.TriggerAvailable
		if v := n.Get("available"); v != nil && v.Kind == core.JObj {
			t.Select = dc.selector(v, "available", model.SelectorMembers.Property)
		} else {
			t.Entity, _ = dc.str(v, "available")
		}
	}
}

// cronTrigger parses a cron trigger's spec, once: the run form keeps the
// schedule.
func (dc *decoder) cronTrigger(v *core.JNode, t *model.Trigger) {
	if dc.paramField(v, "cron", &t.Inputs) {
		return
	}
	s, ok := dc.str(v, "cron")
	if !ok {
		return
	}
	t.Cron = s
	var err error
	if t.Schedule, err = clock.ParseCron(s); err != nil {
		dc.Diags.Add(core.CodeBadCron, v.Ptr, "e.g. \"0 30 7 * * 1-5\" (sec min hour dom month dow) or \"30 7 * * *\"", "cron %q: %v", s, err)
	}
}

// timeTrigger reads a time trigger's "HH:MM[:SS]" into its daily schedule.
func (dc *decoder) timeTrigger(v *core.JNode, t *model.Trigger) {
	if dc.paramField(v, "at", &t.Inputs) {
		return
	}
	s, ok := dc.str(v, "at")
	if !ok {
		return
	}
	t.At = s
	if !clock.ValidClock(s) {
		dc.Diags.Add(core.CodeBadTime, v.Ptr, "e.g. \"07:30\" or \"22:15:30\"", "at %q is not HH:MM or HH:MM:SS", s)
		return
	}
	t.Schedule, _ = clock.ParseCron(model.TimeOfDaySpec(s))
}

func (dc *decoder) sunTrigger(n *core.JNode, t *model.Trigger) {
	v := n.Get("sun")
	if s, ok := dc.str(v, "sun"); ok {
		t.Sun = s
		if s != "sunrise" && s != "sunset" {
			dc.Diags.Add(core.CodeConstraint, v.Ptr, core.HintFor(core.CloseMatches(s, []string{"sunrise", "sunset"}, 1)), "sun must be \"sunrise\" or \"sunset\", got %q", s)
		}
	}
	if v := n.Get("offset"); v != nil && !dc.paramField(v, "offset", &t.Inputs) {
		t.Offset = dc.constDuration(v, "offset", true)
	}
}

func (dc *decoder) triggerFilters(n *core.JNode, t *model.Trigger) {
	switch t.Kind {
	case model.TriggerState:
		t.To = jvalue(n.Get("to"))
		t.From = jvalue(n.Get("from"))
		t.NotTo = jvalue(n.Get("not_to"))
		t.NotFrom = jvalue(n.Get("not_from"))
		for _, pair := range [][2]string{{"to", "not_to"}, {"from", "not_from"}} {
			if v := n.Get(pair[1]); v != nil && n.Get(pair[0]) != nil {
				dc.Diags.Add(core.CodeConflictFields, v.Ptr, "", "a state trigger uses either %s or %s, not both", pair[0], pair[1])
			}
		}
	case model.TriggerEvent:
		t.To = jvalue(n.Get("value"))
	case model.TriggerNumeric:
		t.Above, t.Below = dc.bounds(n, &t.Inputs)
	case model.TriggerAvailable:
		t.To = jvalue(n.Get("to"))
	}
	if t.Kind == model.TriggerState || t.Kind == model.TriggerNumeric || t.Kind == model.TriggerAvailable {
		if v := n.Get("for"); v != nil && !dc.paramField(v, "for", &t.Inputs) {
			t.For = dc.constDuration(v, "for", false)
		}
	}
}

// bounds reads above and below: numbers, or params (recorded in inputs).
func (dc *decoder) bounds(n *core.JNode, inputs *[]model.ParamField) (above, below *float64) {
	if v := n.Get("above"); v != nil && !dc.paramField(v, "above", inputs) {
		if f, ok := dc.bound(v, "above"); ok {
			above = &f
		}
	}
	if v := n.Get("below"); v != nil && !dc.paramField(v, "below", inputs) {
		if f, ok := dc.bound(v, "below"); ok {
			below = &f
		}
	}
	if above != nil && below != nil && *above >= *below {
		dc.Diags.Add(core.CodeUnreachableValue, n.Get("below").Ptr, "above < value < below is a band; above must be less than below", "no value is above %g and below %g", *above, *below)
	}
	return above, below
}

// bound reads above or below as a number. Home Assistant users write an
// entry there ("humidity_limit.state"): the hint says what compares two
// entries.
func (dc *decoder) bound(n *core.JNode, what string) (float64, bool) {
	if n.Kind != core.JStr {
		return dc.number(n, what)
	}
	dc.Diags.Add(core.CodeTypeMismatch, n.Ptr,
		`above and below take a number or "{{ params.x }}"; to compare with another entry's value, use a condition such as "state('a.humidity') > state('b.state')"`,
		"%s must be a number, got string", what)
	return 0, false
}

func jvalue(n *core.JNode) model.Value {
	if n == nil {
		return model.Value{}
	}
	return model.Value{Set: true, V: n.Value()}
}

// Printer phrases JSON Schema findings in English.
var Printer = message.NewPrinter(language.English)

// LeafErrors flattens a validation error tree into its most specific
// findings.
func LeafErrors(ve *jsonschema.ValidationError, out []*jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return append(out, ve)
	}
	for _, c := range ve.Causes {
		out = LeafErrors(c, out)
	}
	return out
}

// FirstLeafMessage is the most specific message of a schema validation error.
func FirstLeafMessage(err error) string {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		if ls := LeafErrors(ve, nil); len(ls) > 0 {
			return ls[0].ErrorKind.LocalizedString(Printer)
		}
	}
	return err.Error()
}
