package validate

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/decode"
	"github.com/pilothouse/pilothouse/rules/internal/model"
	"github.com/pilothouse/pilothouse/rules/internal/plan"
)

// ValidateOptions are the inputs of Validate besides the program and the
// catalog snapshot.
type ValidateOptions struct {
	Limits core.Limits
	// Context is the validate request's context member (nil = absent).
	// automation/1 declares no context_schema, so any supplied context is a
	// context_binding finding.
	Context json.RawMessage
	// HasLocation reports whether the server knows its latitude/longitude;
	// sun triggers need it.
	HasLocation bool
	// Zone is the server's time zone: plans name it beside clock times
	// (nil: they say "server time").
	Zone *time.Location
	// Automation resolves promoted bodies by catalog id (may be nil).
	Automation func(id string) (*model.Compiled, bool)
	// Cache is what validations reuse (nil: nothing).
	Cache *model.Cache
	// Bind, when not nil, is execute's input (the params object): the
	// program is checked as it will run with it (bind.go). Catalog
	// references are replaced by the ids they name, which must be visible
	// in the catalog and fit their constraints; findings the input causes
	// are input_binding diagnostics with a path into the input. The
	// program should be valid without Bind first.
	Bind map[string]any
	// Recorded: the catalog is a baseline recorded when the program was
	// bound (load-bearing fields only, no devices): the device type and
	// tag constraints of its references, checked then, are not checked
	// again.
	Recorded bool
	// Installed, when not nil, is the view of the installed rules the
	// overlapping_rule warning reads (scoped to the caller).
	Installed InstalledRules
}

// Result is the outcome of Validate.
type Result struct {
	Valid          bool
	Diagnostics    []pilotage.Diagnostic // never nil
	CatalogVersion string
	Plan           *pilotage.Plan  // iff Valid
	Compiled       *model.Compiled // iff Valid
	// Program is the program as decoded (nil when the text is not a JSON
	// object): what diagnostics point into. Compiled holds what runs.
	Program *model.Program
}

// Validate decodes and checks a program against a caller-scoped catalog
// snapshot. Invalid programs are a normal Result with Valid false; the
// error is a *pilotage.RequestError (resource_exhausted) when a validation
// bound is exceeded. Validate has no side effect.
func Validate(raw []byte, cat model.Catalog, o ValidateOptions) (*Result, error) {
	lim := o.Limits.WithDefaults()
	deadline := time.Now().Add(lim.ValidateWall)
	dc := decode.NewDecoder(lim, deadline, o.Cache)
	prog, err := dc.Decode(raw)
	if err != nil {
		return nil, err
	}
	c := &checker{
		cat: cat, o: o, lim: lim, deadline: deadline, strs: dc.Strs, d: dc.Diags,
		entries: map[string]*pilotage.Entry{},
		schemas: map[string]*jsonschema.Schema{}, allIDs: dc.IDs,
		seenVars: map[string]bool{}, seenSteps: map[string]bool{},
	}
	if o.Context != nil {
		c.d.Add(core.CodeContextBinding, "", "omit context: automation/1 takes none", "context was supplied, but automation/1 declares no context_schema")
	}
	if prog != nil {
		prog = c.bindTo(prog)
		c.program(prog)
		if c.fatal != nil {
			return nil, c.fatal
		}
		if c.bind != nil {
			c.d.List = c.bind.mapped(c.d.List)
		}
	}
	res := &Result{Diagnostics: c.d.List, CatalogVersion: cat.Version(), Program: prog}
	if res.Diagnostics == nil {
		res.Diagnostics = []pilotage.Diagnostic{}
	}
	sort.SliceStable(res.Diagnostics, func(i, j int) bool {
		return core.ComparePtr(res.Diagnostics[i].Path, res.Diagnostics[j].Path) < 0
	})
	res.Valid = prog != nil && !core.HasErrors(res.Diagnostics)
	if !res.Valid {
		return res, nil
	}
	var canon bytes.Buffer
	if err := json.Compact(&canon, raw); err != nil {
		canon.Reset()
		canon.Write(raw)
	}
	res.Compiled = c.compiled(prog, canon.Bytes())
	res.Plan = res.Compiled.Plan
	return res, nil
}

// compiled assembles the validated program, lowered into its run form.
func (c *checker) compiled(prog *model.Program, canon []byte) *model.Compiled {
	refs := core.SortedKeys(c.entries)
	entries := make([]*pilotage.Entry, len(refs))
	for i, id := range refs {
		entries[i] = c.entries[id]
	}
	cp := &model.Compiled{
		Raw:      canon,
		Refs:     refs,
		Entries:  entries,
		ExprSels: c.exprSels,
		Sub:      c.sub, // nil unless the program calls promoted automations

		CallDepth: c.callDepth,
	}
	for _, name := range core.SortedKeys(prog.RefParams) {
		cp.RefList = append(cp.RefList, prog.RefParams[name])
	}
	cp.Form = model.Lower(prog, &model.Interner{Cache: c.o.Cache, Entry: cp.Entry})
	if c.o.Zone != nil {
		cp.Zone, cp.Loc = model.ZoneName(c.o.Zone), c.o.Zone
	}
	cp.Plan = plan.BuildPlan(cp)
	return cp
}

// checker holds one validation's catalog-dependent pass.
type checker struct {
	cat      model.Catalog
	o        ValidateOptions
	lim      core.Limits
	deadline time.Time
	fatal    error
	d        core.Diags
	strs     map[string]string
	allIDs   map[string]string // every trigger/condition/step id

	entries map[string]*pilotage.Entry
	sub     map[string]*model.Compiled
	// callDepth is the program's CallDepth so far.
	callDepth int
	schemas   map[string]*jsonschema.Schema // by entry id; nil = unusable
	hints     int

	seenVars  map[string]bool
	seenSteps map[string]bool
	// paramNames are the declared params (nil = not knowable: the schema
	// admits other members).
	paramNames map[string]bool
	progParams json.RawMessage // the params schema
	// refs are the catalog-reference params; bind is the bound input
	// (nil: validating the program itself).
	refs map[string]*model.RefParam
	bind *binding
	// selectors counts the selectors resolved so far (each visits the
	// catalog; MaxSelectors bounds them).
	selectors int
	// exprSels are what expressions' selector objects resolved to
	// (Compiled.ExprSels).
	exprSels map[string][]string
}

// bindTo binds prog to the options' input, when there is one and prog
// decoded without errors: the checker then checks the bound program.
func (c *checker) bindTo(prog *model.Program) *model.Program {
	c.refs = prog.RefParams
	if c.o.Bind == nil || core.HasErrors(c.d.List) {
		return prog
	}
	c.d.List = nil // what the decoder found was reported when the program was validated
	prog, c.bind = bindProgram(prog, c.o.Bind, c.lim)
	return prog
}

// DeclaredParams reads the property names of a params schema; nil when the
// schema admits undeclared members.
func DeclaredParams(raw json.RawMessage) map[string]bool {
	if len(raw) == 0 {
		return map[string]bool{}
	}
	var s map[string]json.RawMessage
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	for _, k := range []string{"additionalProperties", "patternProperties", "allOf", "anyOf", "oneOf", "$ref", "if", "dependentSchemas", "unevaluatedProperties"} {
		if _, ok := s[k]; ok {
			return nil
		}
	}
	var props map[string]json.RawMessage
	if p, ok := s["properties"]; ok && json.Unmarshal(p, &props) != nil {
		return nil
	}
	out := make(map[string]bool, len(props))
	for k := range props {
		out[k] = true
	}
	return out
}

func (c *checker) alive() bool {
	if c.fatal != nil {
		return false
	}
	if time.Now().After(c.deadline) {
		c.fatal = decode.Exhausted("validation exceeded its wall-time bound of " + c.lim.ValidateWall.String())
		return false
	}
	return true
}

func (c *checker) program(p *model.Program) {
	c.paramNames = DeclaredParams(p.Params)
	c.progParams = p.Params
	if c.bind != nil && !c.checkBinding() {
		return
	}
	for _, t := range p.Triggers {
		if !c.alive() {
			return
		}
		c.trigger(t)
	}
	root := &scope{vars: map[string]bool{}, steps: map[string]bool{}}
	for _, cd := range p.Conditions {
		if cd.Window != nil {
			c.paramFields(cd.Window.Inputs)
		}
		c.expr(cd.Expr, root)
		if cd.Kind == model.CondSun && !c.o.HasLocation {
			c.d.Add(core.CodeMissingLocation, cd.Ptr+"/sun", "ask the operator to configure the location, or use a time condition: {\"time\": {\"after\": \"18:00\", \"before\": \"07:00\"}}", "a sun condition needs the server's latitude/longitude, which is not configured")
		}
		if cd.ID != "" {
			root.steps[cd.ID] = true
			c.seenSteps[cd.ID] = true
		}
	}
	c.steps(p.Steps, root)
	c.overlaps(p)
}

// lookup resolves a catalog id referenced at path, reporting unknown names
// (with close matches from the visible catalog only) and wrong kinds.
// rng, when not nil, locates the id inside the string at path.
func (c *checker) lookup(id, path string, rng *pilotage.Range, what string, kinds ...pilotage.Kind) *pilotage.Entry {
	return c.lookupFor(id, path, rng, what, false, kinds...)
}

// maxHinted bounds the unknown names of one validation that get close-match
// hints (each costs a scan of the visible catalog).
const maxHinted = 20

// suggest lists visible ids close to id by edit distance, preferring entries
// of a wanted kind (callable ones for a call); when none is close, it offers
// the wanted entries of the same device (the id's part before '.').
func (c *checker) suggest(id string, callable bool, kinds []pilotage.Kind) []string {
	wanted := c.wantFunc(callable, kinds)
	var out []string
	for _, m := range core.CloseMatches(id, c.cat.IDs(), 32) {
		if wanted(m) && len(out) < 3 {
			out = append(out, m)
		}
	}
	if len(out) > 0 {
		return out
	}
	return c.sameDevice(id, wanted)
}

// wantFunc accepts the ids of callable entries (callable) or of kinds.
func (c *checker) wantFunc(callable bool, kinds []pilotage.Kind) func(string) bool {
	return func(x string) bool {
		e, ok := c.cat.Get(x)
		switch {
		case !ok:
			return false
		case callable:
			return e.Callable
		case len(kinds) > 0:
			return slices.Contains(kinds, e.Kind)
		}
		return true
	}
}

// sameDevice lists (up to 3, the most similar to id first) entries of the
// device id names (the part before '.', or id itself when it names a
// device) that want accepts.
func (c *checker) sameDevice(id string, want func(string) bool) []string {
	dev, _, _ := strings.Cut(id, ".")
	ids := c.cat.IDs()
	var of []string
	i := sort.SearchStrings(ids, dev+".")
	for ; i < len(ids) && strings.HasPrefix(ids[i], dev+"."); i++ {
		if ids[i] != id && want(ids[i]) {
			of = append(of, ids[i])
		}
	}
	return core.Similar(id, of, 3, -1)
}

func (c *checker) lookupFor(id, path string, rng *pilotage.Range, what string, callable bool, kinds ...pilotage.Kind) *pilotage.Entry {
	e, ok := c.cat.Get(id)
	if !ok {
		hint := ""
		if c.hints < maxHinted {
			c.hints++
			hint = core.HintFor(c.suggest(id, callable, kinds))
		}
		if hint == "" {
			hint = "look it up with pilotage_lookup (verb list, q = part of the name)"
		}
		g := c.d.Add(core.CodeUnknownName, path, hint, "%s %q is not in the catalog", what, id)
		g.Range = rng
		return nil
	}
	if len(kinds) > 0 && !slices.Contains(kinds, e.Kind) {
		g := c.d.Add(core.CodeWrongKind, path, core.HintFor(c.sameDevice(id, c.wantFunc(callable, kinds))), "%s %q is %s %s entry; want %s", what, id, core.Article(string(e.Kind)), e.Kind, kindList(kinds))
		g.Range = rng
		return nil
	}
	if e.ID == id {
		id = e.ID // the catalog's copy: the program's own copy can be freed
	}
	c.entries[id] = e
	return e
}

func kindList(ks []pilotage.Kind) string {
	s := ""
	for i, k := range ks {
		if i > 0 {
			s += " or "
		}
		s += string(k)
	}
	return s
}

func (c *checker) trigger(t *model.Trigger) {
	c.paramFields(t.Inputs)
	switch t.Kind {
	case model.TriggerState, model.TriggerNumeric:
		if t.Select != nil {
			c.selectTrigger(t)
			return
		}
		if _, tmpl := c.refSite(t.Entity, t.Ptr+"/state", pilotage.KindState); t.Entity == "" || tmpl {
			return
		}
		e := c.lookup(t.Entity, t.Ptr+"/state", nil, "state", pilotage.KindState)
		if e != nil {
			c.eventFilter(e, t.To, t.Ptr+"/to")
			c.eventFilter(e, t.From, t.Ptr+"/from")
			c.eventFilter(e, t.NotTo, t.Ptr+"/not_to")
			c.eventFilter(e, t.NotFrom, t.Ptr+"/not_from")
			if t.Kind == model.TriggerNumeric {
				c.numeric(e, t.Ptr+"/state")
			}
		}
	case model.TriggerEvent:
		if _, tmpl := c.refSite(t.Entity, t.Ptr+"/event", pilotage.KindEvent); t.Entity == "" || tmpl {
			return
		}
		if e := c.lookup(t.Entity, t.Ptr+"/event", nil, "event", pilotage.KindEvent); e != nil {
			c.eventFilter(e, t.To, t.Ptr+"/value")
		}
	case model.TriggerAvailable:
		c.availableTrigger(t)
	case model.TriggerSun:
		if !c.o.HasLocation {
			c.d.Add(core.CodeMissingLocation, t.Ptr+"/sun", "ask the operator to configure the location, or use an \"at\" or \"cron\" trigger", "a sun trigger needs the server's latitude/longitude, which is not configured")
		}
	}
}

// filter warns when a to/from/value filter can never match the entry's
// output_schema.
func (c *checker) filter(e *pilotage.Entry, v model.Value, path string) {
	if !v.Set || len(e.OutputSchema) == 0 {
		return
	}
	sch := c.schema("out:"+e.ID, e.OutputSchema)
	if sch == nil {
		return
	}
	if err := sch.Validate(v.V); err != nil {
		c.d.Add(core.CodeUnreachableValue, path, outputHint(e), "%s never reports %s: %s", e.ID, core.CompactJSON(v.V), decode.FirstLeafMessage(err))
	}
}

// eventFilter checks an event's value filter: one value, or a list of
// values any of which matches, each one the entry can report.
func (c *checker) eventFilter(e *pilotage.Entry, v model.Value, path string) {
	list, isList := v.V.([]any)
	if !v.Set || !isList {
		c.filter(e, v, path)
		return
	}
	if len(list) == 0 {
		c.d.Add(core.CodeConstraint, path, "list the values to match, e.g. [\"double\", \"triple\"], or drop value to match every event", "value lists no value: the trigger could never fire")
	}
	for i, x := range list {
		c.filter(e, model.Value{Set: true, V: x}, path+"/"+strconv.Itoa(i))
	}
}

// numeric warns when a threshold watches a state whose schema is not a number.
func (c *checker) numeric(e *pilotage.Entry, path string) {
	var s struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(e.OutputSchema, &s) != nil || s.Type == nil {
		return
	}
	ok := false
	switch t := s.Type.(type) {
	case string:
		ok = t == "number" || t == "integer"
	case []any:
		for _, x := range t {
			ok = ok || x == "number" || x == "integer"
		}
	}
	if !ok {
		c.d.Add(core.CodeUnreachableValue, path, "use to/from for non-numeric states", "%s is not numeric (type %v), so above/below never match", e.ID, s.Type)
	}
}

func outputHint(e *pilotage.Entry) string {
	var s struct {
		Enum []any `json:"enum"`
		Type any   `json:"type"`
	}
	if json.Unmarshal(e.OutputSchema, &s) != nil {
		return ""
	}
	if len(s.Enum) > 0 {
		return "it reports one of " + core.CompactJSON(s.Enum)
	}
	if s.Type != nil {
		return "it reports a value of type " + core.CompactJSON(s.Type)
	}
	return ""
}

// schema compiles (once per validation) a catalog entry's schema; nil
// when it does not compile (the catalog's problem, not the program's: such
// values are then not checked).
func (c *checker) schema(key string, raw json.RawMessage) *jsonschema.Schema {
	if s, ok := c.schemas[key]; ok {
		return s
	}
	s := c.o.Cache.Schema(raw)
	c.schemas[key] = s
	return s
}
