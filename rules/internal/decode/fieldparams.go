package decode

import (
	"strings"

	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// paramField records n as a param field (model.ParamField) when it is a
// string holding a template, and reports whether it was one (then no
// constant is read). Only exactly "{{ params.<name> }}" is accepted: the
// value must be known before the rule is armed.
func (dc *decoder) paramField(n *core.JNode, field string, into *[]model.ParamField) bool {
	if n == nil || n.Kind != core.JStr || !strings.Contains(n.Str, "{{") {
		return false
	}
	k := model.ParamFieldKinds[field]
	name, ok := model.ParamSite(n.Str)
	if !ok {
		dc.Diags.Add(k.Code, n.Ptr, `write a constant, or exactly "{{ params.<name> }}" naming a param that execute binds`,
			"%s %q: here a template must be exactly \"{{ params.<name> }}\" (the value is bound when the rule is deployed, not evaluated per event)", field, n.Str)
		return true
	}
	*into = append(*into, model.ParamField{Field: field, Param: name, Ptr: n.Ptr})
	return true
}
