package decode

import (
	"slices"
	"strings"

	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// selector decodes a selector object standing in member what; nameKey is
// the member naming the entry ("action" or "property").
func (dc *decoder) selector(v *core.JNode, what, nameKey string) *model.Selector {
	allowed := append(slices.Clone(model.SelectorMembers.Filters), nameKey)
	dc.fields(v, "a selector ("+what+")", allowed)
	s := &model.Selector{}
	dst := []*string{&s.Area, &s.Type, &s.Tag, &s.Name}
	for i, k := range allowed {
		n := v.Get(k)
		if n == nil {
			continue
		}
		str, ok := dc.str(n, what+"."+k)
		switch {
		case !ok:
		case strings.Contains(str, "{{"):
			dc.Diags.Add(core.CodeConstraint, n.Ptr, "write the value itself, e.g. \"living\"", "a selector's %s is a constant: templates are not allowed here, so every entry it may address is known when the program is checked", k)
		case str == "":
			dc.Diags.Add(core.CodeConstraint, n.Ptr, "", "a selector's %s is not empty", k)
		default:
			*dst[i] = str
		}
	}
	if v.Get(nameKey) == nil {
		dc.Diags.Add(core.CodeMissingField, v.Ptr, `e.g. {"area": "living", "type": "light", "`+nameKey+`": "set"}`, "a selector needs %q: which %s of each device it addresses", nameKey, nameKey)
	}
	if v.Get("area") == nil && v.Get("type") == nil && v.Get("tag") == nil {
		dc.Diags.Add(core.CodeMissingField, v.Ptr, `e.g. {"area": "living", "`+nameKey+`": "..."}`, "a selector needs at least one of area, type, tag")
	}
	return s
}
