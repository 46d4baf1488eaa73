package plan

import (
	"fmt"
	"strings"

	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// The phrases of a trigger's fields, naming the param (and its default)
// where the program is unbound (model.ParamField).

func holdText(t *model.RunTrigger, how string) string {
	if in := t.Inputs(); model.HasField(in, "for") {
		return " " + how + " for " + model.FieldText(in, "for", "")
	}
	return holdFor(how, t.Hold)
}

// boundsText is "above 70", "below 30" or "above 20 and below 30".
func boundsText(t *model.RunTrigger) string {
	in := t.Inputs()
	above, below := t.Bounds()
	var is []string
	if above != nil || model.HasField(in, "above") {
		is = append(is, "above "+model.FieldText(in, "above", fmtBound(above)))
	}
	if below != nil || model.HasField(in, "below") {
		is = append(is, "below "+model.FieldText(in, "below", fmtBound(below)))
	}
	return strings.Join(is, " and ")
}

func atText(t *model.RunTrigger) string { return model.FieldText(t.Inputs(), "at", t.Spec()) }

func sunText(t *model.RunTrigger) string {
	sun, offset := t.Sun()
	if in := t.Inputs(); model.HasField(in, "offset") {
		return sun + " shifted by " + model.FieldText(in, "offset", "")
	}
	return clock.SunPhrase(sun, offset)
}

func fmtBound(v *float64) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%g", *v)
}
