package rules

import (
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
func CheckParams(c *Compiled, params any, at string) []pilotage.Diagnostic {
	var d diags
	if params == nil {
		params = map[string]any{}
	}
	if len(c.params) == 0 {
		if m, ok := params.(map[string]any); !ok || len(m) > 0 {
			d.add(CodeInputBinding, at, "declare params in the program, or send no input", "the program declares no params, so input must be empty")
		}
		return d.list
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(c.params))
	if err != nil {
		d.add(CodeInputBinding, at, "", "the program's params schema does not decode: %v", err)
		return d.list
	}
	sch, err := compileSchema(doc)
	if err != nil {
		d.add(CodeInputBinding, at, "", "the program's params schema does not compile: %v", err)
		return d.list
	}
	err = sch.Validate(params)
	var ve *jsonschema.ValidationError
	if err == nil || !errors.As(err, &ve) {
		if err != nil {
			d.add(CodeInputBinding, at, "", "%v", err)
		}
		return d.list
	}
	for _, l := range leafErrors(ve, nil) {
		path := at
		for _, tok := range l.InstanceLocation {
			path += "/" + escapePtr(tok)
		}
		if req, ok := l.ErrorKind.(*kind.Required); ok {
			// Located at the member that is missing (where it goes).
			for _, m := range req.Missing {
				if r := c.refParam(m); r != nil && path == at {
					d.add(CodeInputBinding, path+"/"+escapePtr(m), "find one with pilotage_lookup (verb list, kind "+string(r.Kind)+")",
						"params needs %q: the id of %s", m, r.Describe())
					continue
				}
				d.add(CodeInputBinding, path+"/"+escapePtr(m), "", "params needs %q", m)
			}
			continue
		}
		d.add(CodeInputBinding, path, "", "params: %s", l.ErrorKind.LocalizedString(printer))
	}
	return d.list
}
