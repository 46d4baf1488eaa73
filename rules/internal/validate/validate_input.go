package validate

import (
	"bytes"
	"errors"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/decode"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// CheckParams checks execute's params value (the program's input: the
// whole input for a deploy, input.params in a test run) against c's
// params schema. Findings carry code input_binding and a JSON
// Pointer into input, prefixed with at ("" or "/params").
func CheckParams(c *model.Compiled, params any, at string) []pilotage.Diagnostic {
	var d core.Diags
	if params == nil {
		params = map[string]any{}
	}
	if len(c.ParamsSchema) == 0 {
		if m, ok := params.(map[string]any); !ok || len(m) > 0 {
			d.Add(core.CodeInputBinding, at, "declare params in the program, or send no input", "the program declares no params, so input must be empty")
		}
		return d.List
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.ParamsSchema))
	if err != nil {
		d.Add(core.CodeInputBinding, at, "", "the program's params schema does not decode: %v", err)
		return d.List
	}
	sch, err := model.CompileSchema(doc)
	if err != nil {
		d.Add(core.CodeInputBinding, at, "", "the program's params schema does not compile: %v", err)
		return d.List
	}
	undeclared(&d, c, params, at)
	err = sch.Validate(params)
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		if err != nil {
			d.Add(core.CodeInputBinding, at, "", "%v", err)
		}
		return d.List
	}
	for _, l := range decode.LeafErrors(ve, nil) {
		path := at
		for _, tok := range l.InstanceLocation {
			path += "/" + core.EscapePtr(tok)
		}
		if req, ok := l.ErrorKind.(*kind.Required); ok {
			// Located at the member that is missing (where it goes).
			for _, m := range req.Missing {
				if r := c.RefParam(m); r != nil && path == at {
					d.Add(core.CodeInputBinding, path+"/"+core.EscapePtr(m), "find one with pilotage_lookup (verb list, kind "+string(r.Kind)+")",
						"params needs %q: the id of %s", m, r.Describe())
					continue
				}
				d.Add(core.CodeInputBinding, path+"/"+core.EscapePtr(m), "", "params needs %q", m)
			}
			continue
		}
		d.Add(core.CodeInputBinding, path, "", "params: %s", l.ErrorKind.LocalizedString(decode.Printer))
	}
	return d.List
}

// undeclared reports input members a closed params schema (plain
// properties) does not declare: JSON Schema would admit them, but such a
// member is a misspelt param whose default would silently be used.
func undeclared(d *core.Diags, c *model.Compiled, params any, at string) {
	m, ok := params.(map[string]any)
	decl := DeclaredParams(c.ParamsSchema)
	if !ok || decl == nil {
		return
	}
	names := make([]string, 0, len(decl))
	for k := range decl {
		names = append(names, k)
	}
	sort.Strings(names)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !decl[k] {
			d.Add(core.CodeInputBinding, at+"/"+core.EscapePtr(k), core.HintFor(core.CloseMatches(k, names, 3)),
				"params declares no %q (it declares %s)", k, strings.Join(core.QuoteAll(names), ", "))
		}
	}
}
