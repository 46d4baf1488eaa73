package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// The phrases of a trigger's fields, naming the param (and its default)
// where the program is unbound (model.ParamField).

// fieldText is how a plan shows a field: its param (and default) when
// the program is unbound, else its constant.
func fieldText(inputs []model.RunInput, field, constant string) string {
	for _, f := range inputs {
		if f.Field != field {
			continue
		}
		s := "{{ params." + f.Param + " }}"
		if f.Default != "" {
			s += " (default " + f.Default + ")"
		}
		return s
	}
	return constant
}

// hasField reports whether field is written as a param.
func hasField(inputs []model.RunInput, field string) bool {
	return slices.ContainsFunc(inputs, func(f model.RunInput) bool { return f.Field == field })
}

func holdText(t *model.RunTrigger, how string) string {
	if in := t.Inputs(); hasField(in, "for") {
		return " " + how + " for " + fieldText(in, "for", "")
	}
	return holdFor(how, t.Hold)
}

// boundsText is "above 70", "below 30" or "above 20 and below 30".
func boundsText(t *model.RunTrigger) string {
	in := t.Inputs()
	above, below := t.Bounds()
	var is []string
	if above != nil || hasField(in, "above") {
		is = append(is, "above "+fieldText(in, "above", fmtBound(above)))
	}
	if below != nil || hasField(in, "below") {
		is = append(is, "below "+fieldText(in, "below", fmtBound(below)))
	}
	return strings.Join(is, " and ")
}

func atText(t *model.RunTrigger) string { return fieldText(t.Inputs(), "at", t.Spec()) }

func sunText(t *model.RunTrigger) string {
	sun, offset := t.Sun()
	if in := t.Inputs(); hasField(in, "offset") {
		return sun + " shifted by " + fieldText(in, "offset", "")
	}
	return clock.SunPhrase(sun, offset)
}

func fmtBound(v *float64) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%g", *v)
}
