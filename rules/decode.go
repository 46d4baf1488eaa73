package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Decode parses an automation/1 program. Every finding about the text
// (syntax, shape, types, expressions, durations, cron specs, ids) is a
// diagnostic located by JSON Pointer; catalog references are checked by
// Validate. The *Program is nil only when the text is not a JSON object; it
// may be partial when there are errors. Exceeding a bound of lim returns a
// *pilotage.RequestError of kind resource_exhausted.
func Decode(raw []byte, lim Limits) (*Program, []pilotage.Diagnostic, error) {
	lim = lim.WithDefaults()
	dc := newDecoder(lim, time.Now().Add(lim.ValidateWall), nil)
	p, err := dc.decode(raw)
	if err != nil {
		return nil, nil, err
	}
	return p, dc.d.list, nil
}

type decoder struct {
	lim      Limits
	cache    *Cache // nil: nothing reused
	deadline time.Time
	d        diags
	fatal    error
	ids      map[string]string // id → pointer of its first use
	curStr   string            // the string value being compiled (for ranges)
	strs     map[string]string // pointer → string value holding expressions
}

func newDecoder(lim Limits, deadline time.Time, cache *Cache) *decoder {
	return &decoder{lim: lim, cache: cache, deadline: deadline, ids: map[string]string{}, strs: map[string]string{}}
}

func exhausted(msg string) *pilotage.RequestError {
	return pilotage.Errorf(pilotage.ErrResourceExhausted, msg)
}

func (dc *decoder) decode(raw []byte) (*Program, error) {
	if len(raw) > dc.lim.MaxProgramBytes {
		return nil, exhausted(fmt.Sprintf("program is %d bytes, more than the bound of %d", len(raw), dc.lim.MaxProgramBytes))
	}
	root, dups, err := parseJSON(raw, dc.lim.MaxNodes, jsonDepth(dc.lim), dc.deadline)
	var se *jsonSyntaxError
	var le *limitError
	switch {
	case errors.As(err, &le):
		return nil, exhausted(le.msg)
	case errors.As(err, &se):
		line, col := lineCol(raw, se.off)
		g := dc.d.add(CodeSyntax, "", "", "line %d, column %d: %s", line, col, se.msg)
		pos := pilotage.Position{Line: line, Column: col}
		g.Range = &pilotage.Range{Start: pos, End: pilotage.Position{Line: line, Column: col + 1}}
		return nil, nil
	case err != nil:
		return nil, err
	}
	for _, ptr := range dups {
		dc.d.add(CodeDuplicateKey, ptr, "", "member %q appears twice in the same object", lastToken(ptr))
	}
	p := dc.program(root)
	if dc.fatal != nil {
		return nil, dc.fatal
	}
	return p, nil
}

// jsonDepth bounds raw JSON nesting: enough for MaxDepth nested steps (each
// costs about four levels) plus params schemas and argument values.
func jsonDepth(l Limits) int { return 4*l.MaxDepth + 32 }

func lastToken(ptr string) string {
	t := ptr[strings.LastIndexByte(ptr, '/')+1:]
	return strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
}

func (dc *decoder) checkTime() bool {
	if dc.fatal != nil {
		return false
	}
	if time.Now().After(dc.deadline) {
		dc.fatal = exhausted("validation exceeded its wall-time bound of " + dc.lim.ValidateWall.String())
		return false
	}
	return true
}

var programFields = []string{"name", "description", "mode", "max", "throttle", "params", "triggers", "conditions", "steps"}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$`)

func (dc *decoder) program(n *jnode) *Program {
	if n.kind != jObj {
		dc.d.add(CodeTypeMismatch, "", "", "a program is a JSON object, got %s", n.kind)
		return nil
	}
	dc.fields(n, "program", programFields)
	p := &Program{Mode: ModeSingle}
	if v := dc.required(n, "name", "program"); v != nil {
		if s, ok := dc.str(v, "name"); ok {
			p.Name = s
			if !nameRE.MatchString(s) {
				dc.d.add(CodeInvalidID, v.ptr, "use letters, digits, '_', '-' or '.', e.g. \"hall-motion-light\"", "name %q is not id-like (1-64 of A-Z a-z 0-9 _ - ., starting with a letter or digit)", s)
			}
		}
	}
	if v := n.get("description"); v != nil {
		p.Description, _ = dc.str(v, "description")
	}
	dc.mode(n, p)
	if v := n.get("throttle"); v != nil {
		p.Throttle = dc.constDuration(v, "throttle", false)
	}
	if v := n.get("params"); v != nil {
		if p.Params = dc.params(v); p.Params != nil {
			dc.paramDefaults(v)
			p.RefParams = parseRefParams(v.value(), v.ptr, func(code, path, hint, format string, args ...any) {
				dc.d.add(code, path, hint, format, args...)
			})
		}
	}
	if v := dc.required(n, "triggers", "program"); v != nil && dc.array(v, "triggers") {
		if len(v.vals) == 0 {
			dc.d.add(CodeMissingField, v.ptr, "", "a program needs at least one trigger")
		}
		for _, t := range v.vals {
			if tr := dc.trigger(t); tr != nil {
				p.Triggers = append(p.Triggers, tr)
			}
		}
	}
	if v := n.get("conditions"); v != nil && dc.array(v, "conditions") {
		for _, c := range v.vals {
			if cd := dc.condition(c); cd != nil {
				p.Conditions = append(p.Conditions, cd)
			}
		}
	}
	if v := dc.required(n, "steps", "program"); v != nil {
		p.Steps = dc.stepList(v, 1)
		if v.kind == jArr && len(v.vals) == 0 {
			dc.d.add(CodeMissingField, v.ptr, "", "a program needs at least one step")
		}
	}
	return p
}

func (dc *decoder) mode(n *jnode, p *Program) {
	if v := n.get("mode"); v != nil {
		if s, ok := dc.str(v, "mode"); ok {
			switch i := slices.Index(modes, s); {
			case i >= 0:
				p.Mode = modes[i] // the constant: the decoded copy is not kept
			default:
				dc.d.add(CodeBadMode, v.ptr, hintFor(closeMatches(s, modes, 1)), "mode %q is not one of single, restart, queued, parallel", s)
			}
		}
	}
	if v := n.get("max"); v != nil {
		m, ok := dc.integer(v, "max")
		switch {
		case !ok:
		case m < 1:
			dc.d.add(CodeBadMode, v.ptr, "", "max must be at least 1, got %d", m)
		case m > dc.lim.MaxConcurrent:
			dc.d.add(CodeBadMode, v.ptr, fmt.Sprintf("use a max of at most %d", dc.lim.MaxConcurrent),
				"max %d is more than the bound of %d firings of one rule running or queued at once", m, dc.lim.MaxConcurrent)
		case p.Mode != ModeQueued && p.Mode != ModeParallel:
			dc.d.add(CodeBadMode, v.ptr, "set mode to \"queued\" or \"parallel\", or drop max", "max applies only to mode queued or parallel (mode is %s)", p.Mode)
		default:
			p.Max = m
		}
	}
}

var modes = []string{ModeSingle, ModeRestart, ModeQueued, ModeParallel}

// denyLoader refuses every external schema reference: programs are
// attacker-controlled and validation must touch nothing outside them.
type denyLoader struct{}

func (denyLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema references are not allowed (%s)", url)
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

func (dc *decoder) params(v *jnode) json.RawMessage {
	if v.kind != jObj {
		dc.d.add(CodeBadParams, v.ptr, "", "params must be a JSON Schema object, got %s", v.kind)
		return nil
	}
	if t := v.get("type"); t != nil && !(t.kind == jStr && t.str == "object") {
		dc.d.add(CodeBadParams, t.ptr, "", "params describes the program's input object: its type must be \"object\"")
		return nil
	}
	if props := v.get("properties"); props != nil && props.kind == jObj {
		if sc := props.get(ReservedInputMember); sc != nil {
			dc.d.add(CodeBadParams, sc.ptr, "rename the parameter", "%q is reserved in execute input for test-run scenarios: a param may not be called so", ReservedInputMember)
			return nil
		}
		if in := props.get(InstallInputMember); in != nil {
			dc.d.add(CodeBadParams, in.ptr, "rename the parameter", "%q is reserved in execute input for the rule a deploy installs: a param may not be called so", InstallInputMember)
			return nil
		}
	}
	val := v.value()
	if _, err := compileSchema(val); err != nil {
		dc.d.add(CodeBadParams, v.ptr, "", "params is not a valid JSON Schema: %s", schemaErrText(err))
		return nil
	}
	raw, _ := json.Marshal(val)
	return raw
}

// compileSchema compiles a JSON Schema value with no external loading.
func compileSchema(doc any) (*jsonschema.Schema, error) { return compileSchemaAt(doc, "") }

// compileSchemaAt compiles the subschema at the JSON Pointer ptr of doc
// ("" = doc itself). Formats are asserted: "duration" is automation/1's
// (ParseDuration: "90s", "2m", "PT2M"), the others JSON Schema's.
func compileSchemaAt(doc any, ptr string) (sch *jsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			sch, err = nil, fmt.Errorf("schema compiler failed: %v", r)
		}
	}()
	c := jsonschema.NewCompiler()
	c.UseLoader(denyLoader{})
	c.AssertFormat()
	c.RegisterFormat(&jsonschema.Format{Name: "duration", Validate: durationFormat})
	if err := c.AddResource("mem:///schema.json", doc); err != nil {
		return nil, err
	}
	loc := "mem:///schema.json"
	if ptr != "" {
		loc += "#" + ptr
	}
	return c.Compile(loc)
}

// durationFormat is the "duration" format: a string ParseDuration reads.
func durationFormat(v any) error {
	s, ok := v.(string)
	if !ok {
		return nil
	}
	_, err := ParseDuration(s)
	return err
}

// paramDefaults checks each top-level param's default against the param's
// own schema (formats included): a default that does not fit would fail
// the first run that uses it.
func (dc *decoder) paramDefaults(v *jnode) {
	props := v.get("properties")
	if props == nil || props.kind != jObj {
		return
	}
	doc := v.value()
	for i, name := range props.keys {
		p := props.vals[i]
		def := p.get("default")
		if p.kind != jObj || def == nil {
			continue
		}
		sch, err := compileSchemaAt(doc, "/properties/"+url.PathEscape(escapePtr(name)))
		if err != nil {
			continue
		}
		if err := sch.Validate(def.value()); err != nil {
			dc.d.add(CodeBadParams, def.ptr, "", "the default of params.%s does not fit its schema: %s", name, firstLeafMessage(err))
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
		leaves := leafErrors(ve, nil)
		if len(leaves) > 0 {
			l := leaves[0]
			return fmt.Sprintf("at %q: %s", "/"+strings.Join(l.InstanceLocation, "/"), l.ErrorKind.LocalizedString(printer))
		}
	}
	return strings.ReplaceAll(err.Error(), "mem:///schema.json", "params")
}

// ---- triggers and conditions ----

var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// ParseCron parses a cron spec the way triggers do (seconds optional).
func ParseCron(spec string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("cron spec %q: %v", spec, r)
		}
	}()
	if err := checkEvery(spec); err != nil {
		return nil, err
	}
	s, err = cronParser.Parse(spec)
	if err != nil {
		return nil, err
	}
	return wallClock(s), nil
}

// checkEvery refuses an "@every" duration robfig/cron would not honour:
// it runs a schedule at most once a second and drops what is below a
// second, so "@every -1s" and "@every 1ns" fired every second.
func checkEvery(spec string) error {
	f := strings.Fields(spec)
	if len(f) > 0 && (strings.HasPrefix(f[0], "TZ=") || strings.HasPrefix(f[0], "CRON_TZ=")) {
		f = f[1:]
	}
	if len(f) != 2 || f[0] != "@every" {
		return nil
	}
	d, err := time.ParseDuration(f[1])
	if err != nil {
		return fmt.Errorf("@every takes a whole number of seconds, at least 1s (e.g. 90s, 5m, 1h30m): %v", err)
	}
	if d < time.Second || d%time.Second != 0 {
		return fmt.Errorf("@every %s: the schedule runs at most once a second and drops fractions of a second; @every takes a whole number of seconds, at least 1s (e.g. 90s, 5m, 1h30m)", f[1])
	}
	return nil
}

func (dc *decoder) kindKey(n *jnode, what string, keys []string) (string, bool) {
	var found []string
	for _, k := range keys {
		if n.get(k) != nil {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 0:
		dc.d.add(CodeMissingField, n.ptr, "", "%s needs one of: %s", what, strings.Join(keys, ", "))
		return "", false
	case 1:
		return found[0], true
	}
	dc.d.add(CodeConflictFields, n.get(found[1]).ptr, "", "%s has both %q and %q; use exactly one of %s", what, found[0], found[1], strings.Join(keys, ", "))
	return "", false
}

func (dc *decoder) trigger(n *jnode) *Trigger {
	if !dc.checkTime() || !dc.object(n, "trigger") {
		return nil
	}
	t := &Trigger{Ptr: n.ptr}
	t.ID = dc.id(n)
	key, ok := dc.kindKey(n, "a trigger", triggerKeys)
	if !ok {
		dc.fields(n, "trigger", allTriggerFields)
		return t
	}
	dc.triggerKind(n, t, key)
	row, _ := triggerKind(t.Kind)
	allowed := row.Members
	if t.Kind == TriggerNumeric {
		allowed = append(allowed[:len(allowed):len(allowed)], "to", "from") // reported as conflicts above
	}
	dc.fields(n, "a "+string(t.Kind)+" trigger", allowed)
	dc.triggerFilters(n, t)
	return t
}

// triggerKind decodes the member that selects t's kind (key) and what
// goes with it.
func (dc *decoder) triggerKind(n *jnode, t *Trigger, key string) {
	switch key {
	case "state":
		t.Kind = TriggerState
		if n.get("above") != nil || n.get("below") != nil {
			t.Kind = TriggerNumeric
			for _, k := range []string{"to", "from"} {
				if v := n.get(k); v != nil {
					dc.d.add(CodeConflictFields, v.ptr, "", "a state trigger uses either to/from (state change) or above/below (numeric threshold), not both")
				}
			}
		}
		if v := n.get("state"); v != nil && v.kind == jObj {
			t.Select = dc.selector(v, "state", SelectorMembers.Property)
		} else {
			t.Entity, _ = dc.str(v, "state")
		}
	case "event":
		t.Kind = TriggerEvent
		t.Entity, _ = dc.str(n.get("event"), "event")
	case "cron":
		t.Kind = TriggerCron
		dc.cronTrigger(n.get("cron"), t)
	case "at":
		t.Kind = TriggerTime
		dc.timeTrigger(n.get("at"), t)
	case "sun":
		t.Kind = TriggerSun
		dc.sunTrigger(n, t)
	case "available":
		t.Kind = TriggerAvailable
		t.Entity, _ = dc.str(n.get("available"), "available")
	}
}

// cronTrigger parses a cron trigger's spec, once: the run form keeps the
// schedule.
func (dc *decoder) cronTrigger(v *jnode, t *Trigger) {
	s, ok := dc.str(v, "cron")
	if !ok {
		return
	}
	t.Cron = s
	var err error
	if t.Schedule, err = ParseCron(s); err != nil {
		dc.d.add(CodeBadCron, v.ptr, "e.g. \"0 30 7 * * 1-5\" (sec min hour dom month dow) or \"30 7 * * *\"", "cron %q: %v", s, err)
	}
}

// timeTrigger reads a time trigger's "HH:MM[:SS]" into its daily schedule.
func (dc *decoder) timeTrigger(v *jnode, t *Trigger) {
	s, ok := dc.str(v, "at")
	if !ok {
		return
	}
	t.At = s
	if !validClock(s) {
		dc.d.add(CodeBadTime, v.ptr, "e.g. \"07:30\" or \"22:15:30\"", "at %q is not HH:MM or HH:MM:SS", s)
		return
	}
	t.Schedule, _ = ParseCron(timeOfDaySpec(s))
}

func (dc *decoder) sunTrigger(n *jnode, t *Trigger) {
	v := n.get("sun")
	if s, ok := dc.str(v, "sun"); ok {
		t.Sun = s
		if s != "sunrise" && s != "sunset" {
			dc.d.add(CodeConstraint, v.ptr, hintFor(closeMatches(s, []string{"sunrise", "sunset"}, 1)), "sun must be \"sunrise\" or \"sunset\", got %q", s)
		}
	}
	if v := n.get("offset"); v != nil {
		t.Offset = dc.constDuration(v, "offset", true)
	}
}

func (dc *decoder) triggerFilters(n *jnode, t *Trigger) {
	switch t.Kind {
	case TriggerState:
		t.To = jvalue(n.get("to"))
		t.From = jvalue(n.get("from"))
		t.NotTo = jvalue(n.get("not_to"))
		t.NotFrom = jvalue(n.get("not_from"))
		for _, pair := range [][2]string{{"to", "not_to"}, {"from", "not_from"}} {
			if v := n.get(pair[1]); v != nil && n.get(pair[0]) != nil {
				dc.d.add(CodeConflictFields, v.ptr, "", "a state trigger uses either %s or %s, not both", pair[0], pair[1])
			}
		}
	case TriggerEvent:
		t.To = jvalue(n.get("value"))
	case TriggerNumeric:
		t.Above, t.Below = dc.bounds(n)
	case TriggerAvailable:
		t.To = jvalue(n.get("to"))
	}
	if t.Kind == TriggerState || t.Kind == TriggerNumeric || t.Kind == TriggerAvailable {
		if v := n.get("for"); v != nil {
			t.For = dc.constDuration(v, "for", false)
		}
	}
}

func (dc *decoder) bounds(n *jnode) (above, below *float64) {
	if v := n.get("above"); v != nil {
		if f, ok := dc.number(v, "above"); ok {
			above = &f
		}
	}
	if v := n.get("below"); v != nil {
		if f, ok := dc.number(v, "below"); ok {
			below = &f
		}
	}
	if above != nil && below != nil && *above >= *below {
		dc.d.add(CodeUnreachableValue, n.get("below").ptr, "above < value < below is a band; above must be less than below", "no value is above %g and below %g", *above, *below)
	}
	return above, below
}

func jvalue(n *jnode) Value {
	if n == nil {
		return Value{}
	}
	return Value{Set: true, V: n.value()}
}

// timeOfDaySpec is the cron spec (with seconds) of a time trigger's
// "HH:MM[:SS]".
func timeOfDaySpec(at string) string {
	parts := strings.Split(at, ":")
	field := func(i int) string {
		if i >= len(parts) {
			return "0"
		}
		if f := strings.TrimLeft(parts[i], "0"); f != "" {
			return f
		}
		return "0"
	}
	return field(2) + " " + field(1) + " " + field(0) + " * * *"
}

func validClock(s string) bool {
	for _, layout := range []string{"15:04", "15:04:05"} {
		if _, err := time.Parse(layout, s); err == nil && len(s) == len(layout) {
			return true
		}
	}
	return false
}
