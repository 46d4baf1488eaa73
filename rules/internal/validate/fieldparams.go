package validate

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// paramFields checks the param fields (model.ParamField) of the unbound
// program: each param is declared with a type its field takes, and its
// default fits. It fills in the defaults plans show.
func (c *checker) paramFields(fs []model.ParamField) {
	for i := range fs {
		f := &fs[i]
		k := model.ParamFieldKinds[f.Field]
		hint := fmt.Sprintf(`declare it in params: "properties": {"%s": %s}`, f.Param, k.Eg)
		prop, ok := paramProperty(c.progParams, f.Param)
		switch {
		case !ok:
			c.d.Add(core.CodeBadParams, f.Ptr, hint, "params.%s is not declared in the program's params schema", f.Param)
			continue
		case c.refs[f.Param] != nil:
			c.d.Add(core.CodeBadParams, f.Ptr, hint, "params.%s is a catalog reference (an id); %s takes %s", f.Param, f.Field, k.Want)
			continue
		}
		if t := schemaTypes(prop["type"]); len(t) == 0 || slices.ContainsFunc(t, func(s string) bool { return !slices.Contains(k.Types, s) }) {
			c.d.Add(core.CodeBadParams, f.Ptr, hint, "params.%s has type %s; %s takes %s (declare \"type\": %q)", f.Param, typeText(prop["type"]), f.Field, k.Want, k.Types[0])
			continue
		}
		def, has := prop["default"]
		if !has {
			continue
		}
		if _, err := model.FieldValue(f.Field, def); err != nil {
			c.d.Add(core.CodeBadParams, f.Ptr, hint, "the default of params.%s, %s, is no %s: %v", f.Param, core.CompactJSON(def), f.Field, err)
			continue
		}
		f.Default = core.CompactJSON(def)
	}
}

// paramProperty is the schema of the top-level param name.
func paramProperty(schema json.RawMessage, name string) (map[string]any, bool) {
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil, false
	}
	p, ok := s.Properties[name]
	return p, ok && p != nil
}

// schemaTypes reads a JSON Schema "type": a name or a list of names.
func schemaTypes(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			s, _ := x.(string)
			out = append(out, s)
		}
		return out
	}
	return nil
}

func typeText(v any) string {
	if v == nil {
		return "(none)"
	}
	return core.CompactJSON(v)
}

// bindTrigger sets a trigger's param fields from the bound input; what
// does not bind is an input_binding finding at the param.
func (b *binding) bindTrigger(t *model.Trigger) {
	for _, f := range t.Inputs {
		if v, ok := b.field(f); ok {
			model.BindTrigger(t, f.Field, v)
		}
	}
	b.band(t.Inputs, t.Above, t.Below, t.Ptr)
	t.Inputs = nil
}

// bindConditions binds the time and sun conditions' param fields (in
// copies: the program is not changed).
func (b *binding) bindConditions(list []*model.Condition) []*model.Condition {
	out := slices.Clone(list)
	for i, cd := range list {
		if cd.Window == nil || len(cd.Window.Inputs) == 0 {
			continue
		}
		u, w := *cd, *cd.Window
		for _, f := range w.Inputs {
			if v, ok := b.field(f); ok {
				model.BindWindow(&w, f.Field, v)
			}
		}
		if w.After != "" && w.After == w.Before {
			site := w.Inputs[len(w.Inputs)-1].Param
			b.d.Add(core.CodeInputBinding, "/"+core.EscapePtr(site), "drop one bound, or give a window such as after 22:00 before 06:00",
				"%s = %s: after and before are both %s at %s: the window is empty", site, core.CompactJSON(b.params[site]), w.After, cd.Ptr)
		}
		w.Inputs = nil
		u.Window = &w
		out[i] = &u
	}
	return out
}

// bindWait sets a wait's param fields (its thresholds) and returns its
// timeout when a param gives it (0: none does).
func (b *binding) bindWait(w *model.WaitSpec) (timeout time.Duration) {
	for _, f := range w.Inputs {
		v, ok := b.field(f)
		switch {
		case !ok:
		case f.Field == "above":
			n := v.(float64)
			w.Above = &n
		case f.Field == "below":
			n := v.(float64)
			w.Below = &n
		case f.Field == "timeout":
			timeout = v.(time.Duration)
		}
	}
	b.band(w.Inputs, w.Above, w.Below, w.Ptr)
	w.Inputs = nil
	return timeout
}

// field reads and checks the bound value of one param field.
func (b *binding) field(f model.ParamField) (any, bool) {
	path := "/" + core.EscapePtr(f.Param)
	raw, set := b.params[f.Param]
	if !set || raw == nil {
		b.d.Add(core.CodeInputBinding, path, "give it in input, or a default in params", "params needs %q: the %s at %s", f.Param, f.Field, f.Ptr)
		return nil, false
	}
	v, err := model.FieldValue(f.Field, raw)
	if err != nil {
		b.d.Add(core.CodeInputBinding, path, "", "%s = %s: used as the %s at %s: %v", f.Param, core.CompactJSON(raw), f.Field, f.Ptr, err)
		return nil, false
	}
	b.at(f.Ptr, f.Param)
	return v, true
}

// band reports bound thresholds no value can lie between, at the param
// of below (else of above).
func (b *binding) band(inputs []model.ParamField, above, below *float64, ptr string) {
	if above == nil || below == nil || *above < *below {
		return
	}
	site := ""
	for _, f := range inputs {
		if f.Field == "below" || (f.Field == "above" && site == "") {
			site = f.Param
		}
	}
	if site == "" {
		return // both constant: the decoder reported it
	}
	b.d.Add(core.CodeInputBinding, "/"+core.EscapePtr(site), "above < value < below is a band; above must be less than below",
		"%s = %s: no value is above %g and below %g (at %s)", site, core.CompactJSON(b.params[site]), *above, *below, ptr)
}
