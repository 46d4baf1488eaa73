package validate

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/expr-lang/expr/ast"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/decode"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// refSite checks an id position holding a template ("{{" in the id): it
// is fine when it is exactly "{{ params.<name> }}" naming a catalog
// reference of one of kinds; anything else is a templated_id finding that
// says how to declare one. It returns the reference (nil when the id is
// not fine) and whether id was a template at all: only a plain id is
// looked up in the catalog.
func (c *checker) refSite(id, path string, kinds ...pilotage.Kind) (*model.RefParam, bool) {
	if !strings.Contains(id, "{{") {
		return nil, false
	}
	name, exact := model.ParamSite(id)
	r := c.refs[name]
	switch {
	case exact && r != nil && slices.Contains(kinds, r.Kind):
		return r, true
	case exact && r != nil:
		c.d.Add(core.CodeWrongKind, path, model.RefDeclHint(name, kinds[0]), "params.%s is a catalog reference to %s %s; here the id must be %s %s",
			name, core.Article(string(r.Kind)), r.Kind, core.Article(string(kinds[0])), kindList(kinds))
	case exact && c.declared(name):
		c.d.Add(core.CodeTemplatedID, path, model.RefDeclHint(name, kinds[0]), "%q stands where a catalog id goes, but params.%s is not declared as a catalog reference", id, name)
	case exact:
		c.d.Add(core.CodeTemplatedID, path, model.RefDeclHint(name, kinds[0]), "%q stands where a catalog id goes, but params.%s is not declared", id, name)
	default:
		c.d.Add(core.CodeTemplatedID, path, `write the id itself (pilotage_lookup lists them), or declare a catalog param, "properties": {`+model.RefDecl("device", kinds[0])+`} in params, and write "{{ params.device }}" here`,
			"%q: a catalog id here must be known before the rule runs: write the id itself, or exactly \"{{ params.<name> }}\" naming a catalog-reference param", id)
	}
	return nil, true
}

// declared reports whether the params schema declares name (true when
// that is not knowable).
func (c *checker) declared(name string) bool {
	return c.paramNames == nil || c.paramNames[name]
}

// checkBinding checks each catalog reference's bound id: present, a
// string, visible to the caller, fitting its constraints. It reports
// whether all are fine.
func (c *checker) checkBinding() bool {
	ok := true
	for _, name := range core.SortedKeys(c.refs) {
		r := c.refs[name]
		path := "/" + core.EscapePtr(name)
		v, set := c.bind.params[name]
		id, isStr := v.(string)
		switch {
		case !set || v == nil:
			c.d.Add(core.CodeInputBinding, path, c.fitHint(r), "params needs %q: the id of %s", name, r.Describe())
		case !isStr || id == "":
			c.d.Add(core.CodeInputBinding, path, c.fitHint(r), "%s must be a catalog id (a non-empty string), got %s", name, core.CompactJSON(v))
		default:
			e, found := c.cat.Get(id)
			why := "it is not in the catalog"
			if found {
				why = c.misfit(r, e)
			}
			if why == "" {
				continue
			}
			hint := c.fitHint(r)
			if !found {
				if m := c.fitting(r, core.CloseMatches(id, c.cat.IDs(), 8)); len(m) > 0 {
					hint = core.HintFor(m)
				}
			}
			c.d.Add(core.CodeInputBinding, path, hint, "%s = %q: %s; %s needs %s", name, id, why, name, r.Describe())
		}
		ok = false
	}
	return ok
}

// fitHint names up to 3 visible ids that fit r.
func (c *checker) fitHint(r *model.RefParam) string {
	if c.hints >= maxHinted {
		return ""
	}
	c.hints++
	m := c.fitting(r, c.cat.IDs())
	if len(m) == 0 {
		return "no visible catalog entry fits: look with pilotage_lookup (verb list, kind " + string(r.Kind) + ")"
	}
	return "fits: " + strings.Join(m, ", ")
}

// fitting lists (up to 3 of) the ids that fit r.
func (c *checker) fitting(r *model.RefParam, ids []string) []string {
	var out []string
	for _, id := range ids {
		if e, ok := c.cat.Get(id); ok && e.Kind == r.Kind && c.misfit(r, e) == "" {
			out = append(out, id)
			if len(out) == 3 {
				break
			}
		}
	}
	return out
}

// misfit says why entry e does not fit reference r ("" when it does).
func (c *checker) misfit(r *model.RefParam, e *pilotage.Entry) string {
	if e.Kind != r.Kind {
		return "it is " + core.Article(string(e.Kind)) + " " + string(e.Kind)
	}
	if why := c.deviceMisfit(r, e); why != "" {
		return why
	}
	if r.MaxRisk != "" && !model.HintsWithin(e.RiskHints, pilotage.HintsOf(r.MaxRisk)) {
		return "its risk is " + string(e.Risk) + ", more than " + string(r.MaxRisk)
	}
	for _, name := range core.SortedKeys(r.Accepts) {
		for _, v := range r.Accepts[name] {
			if why := c.accepts(e, name, v); why != "" {
				return why
			}
		}
	}
	for _, v := range r.Reports {
		if len(e.OutputSchema) == 0 {
			break
		}
		if sch := c.schema("out:"+e.ID, e.OutputSchema); sch != nil {
			if err := sch.Validate(v); err != nil {
				return "it never reports " + core.CompactJSON(v) + ": " + decode.FirstLeafMessage(err)
			}
		}
	}
	return ""
}

// deviceMisfit checks r's device type and tag.
func (c *checker) deviceMisfit(r *model.RefParam, e *pilotage.Entry) string {
	if c.o.Recorded {
		return ""
	}
	dev := c.deviceOf(e)
	if r.Type != "" && (dev == nil || !hasTagFold(dev.Tags, "type:"+r.Type)) {
		return "its device is not of type " + r.Type + deviceTypeNote(dev)
	}
	if r.Tag != "" && !hasTagFold(e.Tags, r.Tag) && (dev == nil || !hasTagFold(dev.Tags, r.Tag)) {
		return "neither it nor its device is tagged " + r.Tag
	}
	return ""
}

func deviceTypeNote(dev *pilotage.Entry) string {
	if dev == nil {
		return " (no device of its is visible)"
	}
	for _, t := range dev.Tags {
		if strings.HasPrefix(t, "type:") {
			return " (" + dev.ID + " is a " + strings.TrimPrefix(t, "type:") + ")"
		}
	}
	return ""
}

// accepts says why a callable entry does not accept v for argument name
// ("" when it does). The other arguments are left out, so a schema's
// required members and minimum count do not count.
func (c *checker) accepts(e *pilotage.Entry, name string, v any) string {
	if len(e.InputSchema) == 0 {
		return ""
	}
	sch := c.schema("in:"+e.ID, e.InputSchema)
	if sch == nil {
		return ""
	}
	err := sch.Validate(map[string]any{name: v})
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		return ""
	}
	for _, l := range decode.LeafErrors(ve, nil) {
		loc := l.InstanceLocation
		if ap, ok := l.ErrorKind.(*kind.AdditionalProperties); ok && len(loc) == 0 && slices.Contains(ap.Properties, name) {
			return "it takes no argument " + name
		}
		if len(loc) > 0 && loc[0] == name {
			return fmt.Sprintf("it does not accept %s %s: %s", name, core.CompactJSON(v), l.ErrorKind.LocalizedString(decode.Printer))
		}
	}
	return ""
}

// deviceOf returns the visible device entry of e (by its device:<id> tag,
// else the part of its id before '.'), or nil.
func (c *checker) deviceOf(e *pilotage.Entry) *pilotage.Entry {
	if e.Kind == pilotage.KindDevice {
		return e
	}
	id, _, _ := strings.Cut(e.ID, ".")
	for _, t := range e.Tags {
		if d, ok := strings.CutPrefix(t, "device:"); ok {
			id = d
			break
		}
	}
	if d, ok := c.cat.Get(id); ok && d.Kind == pilotage.KindDevice {
		return d
	}
	return nil
}

func hasTagFold(tags []string, tag string) bool {
	return slices.ContainsFunc(tags, func(t string) bool { return strings.EqualFold(t, tag) })
}

// refArg checks the argument of a catalog reader (state, since,
// last_changed) written as params.<name>: fine when name is a catalog
// reference to a state or event (looked up when bound).
func (c *checker) refArg(fn string, arg ast.Node, x *model.Expr, rng func(int, int) *pilotage.Range) bool {
	m, ok := arg.(*ast.MemberNode)
	if !ok {
		return false
	}
	root, ok := m.Node.(*ast.IdentifierNode)
	prop, ok2 := m.Property.(*ast.StringNode)
	if !ok || !ok2 || root.Value != "params" {
		return false
	}
	r := c.refs[prop.Value]
	if r == nil || (r.Kind != pilotage.KindState && r.Kind != pilotage.KindEvent) {
		return false
	}
	if c.bind != nil {
		if id, ok := c.bind.params[r.Name].(string); ok {
			c.bind.at(x.Ptr, r.Name)
			from, to := nodeSpan(arg)
			c.lookup(id, x.Ptr, rng(from, to), fn+"() id", pilotage.KindState, pilotage.KindEvent)
		}
	}
	return true
}

// availableTrigger checks an availability trigger: a state or event
// entry, and a `to` that is true (online) or false (offline).
func (c *checker) availableTrigger(t *model.Trigger) {
	if t.Select != nil {
		// By selector: the devices of the states it addresses, each
		// watched (and held) on its own, as a state trigger by selector.
		c.resolveSelector(t.Select, pilotage.KindState, t.Ptr+"/available", nil)
		c.availableTo(t)
		return
	}
	if _, tmpl := c.refSite(t.Entity, t.Ptr+"/available", pilotage.KindState, pilotage.KindEvent); t.Entity == "" || tmpl {
		return
	}
	c.lookup(t.Entity, t.Ptr+"/available", nil, "available", pilotage.KindState, pilotage.KindEvent)
	c.availableTo(t)
}

// availableTo checks an available trigger's to: availability is a bool.
func (c *checker) availableTo(t *model.Trigger) {
	if _, ok := t.To.V.(bool); t.To.Set && !ok {
		c.d.Add(core.CodeUnreachableValue, t.Ptr+"/to", "true (online) or false (offline)", "availability is true or false, never %s", core.CompactJSON(t.To.V))
	}
}
