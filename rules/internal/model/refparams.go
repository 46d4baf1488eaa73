package model

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"

	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Catalog-reference params: a param whose value is a catalog id, declared
// in the params schema with the member "catalog" (like a Home Assistant
// blueprint's entity selector), and written in the body where an id goes
// as "{{ params.<name> }}". Execute binds it: the id must be visible to
// the caller and fit the constraints, and the rule then runs (and plans)
// with the real id. See bind.go.

// RefKeyword is the member of a params property that declares it a
// catalog reference.
const RefKeyword = "catalog"

// RefParam is one catalog-reference param and its constraints.
type RefParam struct {
	Name string
	Kind pilotage.Kind
	// Type is the device type (pilotage.DeviceTypes) the entry's device
	// must have ("" = any).
	Type string
	// Tag is a tag the entry or its device must carry ("" = any), e.g.
	// "area:hall". Tags compare case-insensitively.
	Tag string
	// Accepts (actions and automations): argument name → values each of
	// which the entry's input_schema must accept for that argument.
	Accepts map[string][]any
	// Reports (states and events): values the entry's output_schema must
	// admit.
	Reports []any
	// MaxRisk bounds the entry's risk ("" = any risk).
	MaxRisk pilotage.Risk
	// HasDefault: the param has a default id (used when none is given).
	HasDefault bool
}

// refMembers are the members of a "catalog" constraint.
var refMembers = []string{"kind", "type", "tag", "accepts", "reports", "max_risk"}

// refKinds are the entry kinds a reference may name.
var refKinds = []pilotage.Kind{pilotage.KindState, pilotage.KindEvent, pilotage.KindAction, pilotage.KindAutomation}

// refNearMisses are members an author may use for a reference instead of
// "catalog" (a Home Assistant selector, an OpenAPI-style extension).
var refNearMisses = []string{"selector", "x-ref", "x-catalog", "ref", "entity", "x-entity"}

// Hints is the worst risk the reference admits: what a plan assumes
// before the param is bound. States and events are read; an action or
// automation is bounded by MaxRisk, or else could be anything.
func (r *RefParam) Hints() pilotage.RiskHints {
	switch {
	case r.Kind == pilotage.KindState || r.Kind == pilotage.KindEvent:
		return pilotage.HintsOf(pilotage.RiskRead)
	case r.MaxRisk != "":
		return pilotage.HintsOf(r.MaxRisk)
	}
	return pilotage.RiskHints{ReadOnly: false, Destructive: true, OpenWorld: true}
}

// Describe says what the reference admits, e.g. "an action of a light
// device accepting state \"ON\", risk at most control".
func (r *RefParam) Describe() string {
	s := core.Article(string(r.Kind)) + " " + string(r.Kind)
	if r.Type != "" {
		s += " of " + core.Article(r.Type) + " " + r.Type + " device"
	}
	if r.Tag != "" {
		s += " tagged " + r.Tag
	}
	if len(r.Accepts) > 0 {
		var parts []string
		for _, k := range core.SortedKeys(r.Accepts) {
			parts = append(parts, k+" "+core.CompactJSON(r.Accepts[k]))
		}
		s += " accepting " + strings.Join(parts, ", ")
	}
	if len(r.Reports) > 0 {
		s += " reporting " + core.CompactJSON(r.Reports)
	}
	if r.MaxRisk != "" {
		s += ", risk at most " + string(r.MaxRisk)
	}
	return s
}

// decl is r's declaration as a params property.
func (r *RefParam) Decl() string {
	c := map[string]any{"kind": r.Kind}
	if r.Type != "" {
		c["type"] = r.Type
	}
	if r.Tag != "" {
		c["tag"] = r.Tag
	}
	if len(r.Accepts) > 0 {
		c["accepts"] = r.Accepts
	}
	if len(r.Reports) > 0 {
		c["reports"] = r.Reports
	}
	if r.MaxRisk != "" {
		c["max_risk"] = r.MaxRisk
	}
	return fmt.Sprintf(`%q: {"type": "string", "catalog": %s}`, r.Name, core.CompactJSON(c))
}

// refFinding reports one finding about a params schema's references.
type refFinding func(code, path, hint, format string, args ...any)

// parseRefParams reads the catalog references among the top-level
// properties of a params schema (a decoded JSON value); base is the
// schema's JSON Pointer. report (nil: ignore) receives each finding;
// a property with a broken constraint is left out.
func ParseRefParams(schema any, base string, report refFinding) map[string]*RefParam {
	if report == nil {
		report = func(string, string, string, string, ...any) {}
	}
	s, _ := schema.(map[string]any)
	props, _ := s["properties"].(map[string]any)
	var out map[string]*RefParam
	for _, name := range core.SortedKeys(props) {
		p, ok := props[name].(map[string]any)
		if !ok {
			continue
		}
		ptr := base + "/properties/" + core.EscapePtr(name)
		nearMiss(name, p, ptr, report)
		c, ok := p[RefKeyword]
		if !ok {
			continue
		}
		if t, ok := p["type"]; ok && t != "string" {
			report(core.CodeBadParams, ptr+"/type", "drop \"type\" or make it \"string\"", "params.%s is a catalog reference: its value is an id, a string (type is %s)", name, core.CompactJSON(t))
			continue
		}
		if r := parseRef(name, c, ptr+"/"+RefKeyword, report); r != nil {
			_, r.HasDefault = p["default"]
			if out == nil {
				out = map[string]*RefParam{}
			}
			out[name] = r
		}
	}
	return out
}

// nearMiss reports a member that looks like a reference declaration under
// another name.
func nearMiss(name string, p map[string]any, ptr string, report refFinding) {
	for _, k := range refNearMisses {
		if _, ok := p[k].(map[string]any); ok {
			report(core.CodeBadParams, ptr+"/"+core.EscapePtr(k), RefDeclHint(name, pilotage.KindAction),
				"%q does not declare a catalog reference in automation/1: use %q", k, RefKeyword)
		}
	}
}

// refDeclHint shows how to declare name as a reference of kind k.
func RefDeclHint(name string, k pilotage.Kind) string {
	return `declare it in params: "properties": {` + RefDecl(name, k) + `}; execute binds it to an id`
}

// refDecl is the declaration of name as a reference of kind k.
func RefDecl(name string, k pilotage.Kind) string {
	ex := map[pilotage.Kind]string{pilotage.KindAction: `, "type": "light", "max_risk": "control"`, pilotage.KindState: `, "type": "binary_sensor"`}[k]
	return fmt.Sprintf(`"%s": {"type": "string", "catalog": {"kind": "%s"%s}}`, name, k, ex)
}

// parseRef reads one "catalog" constraint at ptr.
func parseRef(name string, v any, ptr string, report refFinding) *RefParam {
	m, ok := v.(map[string]any)
	if !ok {
		report(core.CodeTypeMismatch, ptr, `e.g. {"kind": "action", "type": "light"}`, "catalog must be an object, got %s", core.InterpTypeName(v))
		return nil
	}
	bad := false
	for _, k := range core.SortedKeys(m) {
		if !slices.Contains(refMembers, k) {
			report(core.CodeUnknownField, ptr+"/"+core.EscapePtr(k), "allowed here: "+strings.Join(refMembers, ", "), "catalog has no field %q", k)
			bad = true
		}
	}
	r := &RefParam{Name: name}
	kind, ok := m["kind"].(string)
	switch {
	case m["kind"] == nil:
		report(core.CodeMissingField, ptr, `e.g. "kind": "action"`, "catalog needs \"kind\": state, event, action or automation")
		return nil
	case !ok || !slices.Contains(refKinds, pilotage.Kind(kind)):
		report(core.CodeBadParams, ptr+"/kind", core.HintFor(core.CloseMatches(fmt.Sprint(m["kind"]), kindStrings(), 1)), "catalog kind must be state, event, action or automation, got %s", core.CompactJSON(m["kind"]))
		return nil
	}
	r.Kind = pilotage.Kind(kind)
	bad = !r.parseFilters(m, ptr, report) || bad
	bad = !r.parseValues(m, ptr, report) || bad
	if bad {
		return nil
	}
	return r
}

func kindStrings() []string {
	out := make([]string, len(refKinds))
	for i, k := range refKinds {
		out[i] = string(k)
	}
	return out
}

// parseFilters reads type, tag and max_risk.
func (r *RefParam) parseFilters(m map[string]any, ptr string, report refFinding) bool {
	ok := true
	if t, has := m["type"]; has {
		s, _ := t.(string)
		switch {
		case r.Kind == pilotage.KindAutomation:
			report(core.CodeBadParams, ptr+"/type", "drop type", "an automation has no device type")
			ok = false
		case !isDeviceType(s):
			report(core.CodeBadParams, ptr+"/type", core.HintFor(core.CloseMatches(s, deviceTypeNames(), 2)), "type %s is not a device type (see the closed-sets guide: %s)", core.CompactJSON(t), strings.Join(deviceTypeNames(), ", "))
			ok = false
		default:
			r.Type = s
		}
	}
	if t, has := m["tag"]; has {
		if s, isStr := t.(string); isStr && s != "" {
			r.Tag = s
		} else {
			report(core.CodeTypeMismatch, ptr+"/tag", `e.g. "area:hall"`, "tag must be a non-empty string, got %s", core.CompactJSON(t))
			ok = false
		}
	}
	if t, has := m["max_risk"]; has {
		s, _ := t.(string)
		if !isRisk(s) {
			report(core.CodeBadParams, ptr+"/max_risk", "one of read, control, security, external", "max_risk %s is not a risk level", core.CompactJSON(t))
			ok = false
		} else {
			r.MaxRisk = pilotage.Risk(s)
		}
	}
	return ok
}

// parseValues reads accepts (actions, automations) and reports (states,
// events).
func (r *RefParam) parseValues(m map[string]any, ptr string, report refFinding) bool {
	callable := r.Kind == pilotage.KindAction || r.Kind == pilotage.KindAutomation
	ok := true
	if a, has := m["accepts"]; has {
		obj, isObj := a.(map[string]any)
		switch {
		case !callable:
			report(core.CodeBadParams, ptr+"/accepts", "use reports for states and events", "accepts applies to actions and automations, not to a %s", r.Kind)
			ok = false
		case !isObj:
			report(core.CodeTypeMismatch, ptr+"/accepts", `e.g. {"state": ["ON", "OFF"]}`, "accepts must be an object: argument → value or list of values, got %s", core.InterpTypeName(a))
			ok = false
		default:
			r.Accepts = map[string][]any{}
			for _, k := range core.SortedKeys(obj) {
				r.Accepts[k] = valueList(obj[k])
			}
		}
	}
	if v, has := m["reports"]; has {
		if callable {
			report(core.CodeBadParams, ptr+"/reports", "use accepts for actions and automations", "reports applies to states and events, not to an %s", r.Kind)
			ok = false
		} else {
			r.Reports = valueList(v)
		}
	}
	return ok
}

// valueList reads a value or a list of values.
func valueList(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

func isDeviceType(t string) bool {
	return slices.ContainsFunc(pilotage.DeviceTypes, func(d pilotage.DeviceType) bool { return d.Type == t })
}

func deviceTypeNames() []string {
	out := make([]string, len(pilotage.DeviceTypes))
	for i, d := range pilotage.DeviceTypes {
		out[i] = d.Type
	}
	return out
}

// covers reports whether every id that fits r fits o too (as far as the
// constraints tell): r may be passed on where o is wanted.
func (r *RefParam) Covers(o *RefParam) bool {
	if r.Kind != o.Kind || (o.Type != "" && r.Type != o.Type) || (o.Tag != "" && !strings.EqualFold(r.Tag, o.Tag)) {
		return false
	}
	if o.MaxRisk != "" && (r.MaxRisk == "" || !HintsWithin(pilotage.HintsOf(r.MaxRisk), pilotage.HintsOf(o.MaxRisk))) {
		return false
	}
	has := func(l []any, v any) bool {
		return slices.ContainsFunc(l, func(x any) bool { return core.CompactJSON(x) == core.CompactJSON(v) })
	}
	for k, vs := range o.Accepts {
		for _, v := range vs {
			if !has(r.Accepts[k], v) {
				return false
			}
		}
	}
	for _, v := range o.Reports {
		if !has(r.Reports, v) {
			return false
		}
	}
	return true
}

func isRisk(s string) bool {
	return slices.ContainsFunc(pilotage.RiskLevels, func(l pilotage.RiskLevel) bool { return string(l.Risk) == s })
}

// hintsWithin reports whether hints h are no riskier than limit.
func HintsWithin(h, limit pilotage.RiskHints) bool {
	return !(h.Destructive && !limit.Destructive) && !(h.OpenWorld && !limit.OpenWorld) && !(!h.ReadOnly && limit.ReadOnly)
}

// RefParamsOf reads the catalog references declared in an input schema
// (an automation entry's: its params), ignoring broken ones.
func RefParamsOf(schema json.RawMessage) map[string]*RefParam {
	if len(schema) == 0 || !strings.Contains(string(schema), `"`+RefKeyword+`"`) {
		return nil
	}
	var v any
	if json.Unmarshal(schema, &v) != nil {
		return nil
	}
	return ParseRefParams(v, "", nil)
}

// paramSiteRE matches a string that is exactly one "{{ params.<name> }}".
var paramSiteRE = regexp.MustCompile(`^\{\{\s*params\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}$`)

// paramSite returns the param a string names when it is exactly
// "{{ params.<name> }}".
func ParamSite(s string) (string, bool) {
	if !strings.HasPrefix(s, "{{") {
		return "", false
	}
	m := paramSiteRE.FindStringSubmatch(s)
	if m == nil {
		return "", false
	}
	return m[1], true
}
