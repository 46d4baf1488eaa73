package validate

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/decode"
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"bytes"
	"errors"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/pilothouse/pilothouse/pilotage"
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
