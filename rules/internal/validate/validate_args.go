package validate

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/decode"
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/pilothouse/pilothouse/pilotage"
)

// maxArgFindings bounds the bad_arguments findings of one call.
const maxArgFindings = 5

// args checks a call's arguments against the entry's input_schema.
// Constant arguments are checked fully; a templated argument's value is
// unknown until run time, so it only counts as present (and as a known
// property where the schema forbids others).
func (c *checker) args(s *model.Step, e *pilotage.Entry) {
	if len(e.InputSchema) == 0 {
		return
	}
	sch := c.schema("in:"+e.ID, e.InputSchema)
	if sch == nil {
		return
	}
	inst, templated := splitArgs(s.Args)
	report := c.argReporter(e)
	if err := sch.Validate(inst); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			report(s.Ptr+"/args", "%s: %v", s.Call, err)
			return
		}
		for _, l := range decode.LeafErrors(ve, nil) {
			argFinding(s, l, templated, report)
		}
	}
	c.templatedArgs(s, e, templated, report)
}

// reportFunc adds one bad_arguments finding.
type reportFunc func(path, format string, args ...any)

// argReporter reports a call's findings, at most maxArgFindings of them.
func (c *checker) argReporter(e *pilotage.Entry) reportFunc {
	n := 0
	return func(path, format string, args ...any) {
		if n < maxArgFindings {
			c.d.Add(core.CodeBadArguments, path, argHint(e), format, args...)
		}
		n++
	}
}

// splitArgs separates the constant arguments (the instance the schema
// checks) from the templated ones.
func splitArgs(args map[string]*model.Template) (inst map[string]any, templated []string) {
	inst = map[string]any{}
	for k, t := range args {
		if t.IsConst {
			inst[k] = t.Const
		} else {
			templated = append(templated, k)
		}
	}
	return inst, templated
}

// argFinding reports one leaf of the schema's verdict on the constant
// arguments, unless only the templated ones could settle it.
func argFinding(s *model.Step, l *jsonschema.ValidationError, templated []string, report reportFunc) {
	loc := l.InstanceLocation
	if len(loc) > 0 && slices.Contains(templated, loc[0]) {
		return
	}
	base := s.Ptr + "/args"
	path := base
	for _, tok := range loc {
		path += "/" + core.EscapePtr(tok)
	}
	switch k := l.ErrorKind.(type) {
	case *kind.Required:
		missing := slices.DeleteFunc(slices.Clone(k.Missing), func(m string) bool { return slices.Contains(templated, m) })
		if len(missing) == 0 {
			return
		}
		if len(loc) == 0 && len(s.Args) == 0 {
			path = s.Ptr
		}
		report(path, "%s needs argument %s", s.Call, strings.Join(core.QuoteAll(missing), ", "))
		return
	case *kind.AdditionalProperties:
		if len(loc) == 0 {
			for _, p := range k.Properties {
				report(base+"/"+core.EscapePtr(p), "%s takes no argument %q", s.Call, p)
			}
			return
		}
	}
	if len(loc) == 0 && len(templated) > 0 {
		// minProperties, dependencies, oneOf …: unknowable while some
		// arguments are only known at run time.
		return
	}
	report(path, "%s: %s", s.Call, l.ErrorKind.LocalizedString(decode.Printer))
}

// templatedArgs reports templated arguments the schema does not define when
// it forbids additional properties.
func (c *checker) templatedArgs(s *model.Step, e *pilotage.Entry, templated []string, report reportFunc) {
	if len(templated) == 0 {
		return
	}
	var sch struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if json.Unmarshal(e.InputSchema, &sch) != nil || sch.AdditionalProperties == nil || *sch.AdditionalProperties {
		return
	}
	slices.Sort(templated)
	for _, k := range templated {
		if _, ok := sch.Properties[k]; !ok {
			report(s.Ptr+"/args/"+core.EscapePtr(k), "%s takes no argument %q", s.Call, k)
		}
	}
}

// argHint lists the entry's arguments.
func argHint(e *pilotage.Entry) string {
	var sch struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(e.InputSchema, &sch) != nil || len(sch.Properties) == 0 {
		return ""
	}
	return "arguments of " + e.ID + ": " + strings.Join(core.SortedKeys(sch.Properties), ", ") + " (see pilotage_lookup get)"
}
