package decode

import (
	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"fmt"
	"slices"
	"strings"
	"time"
)

// condition decodes one condition: its kind key (ConditionKinds) selects
// an expression, a time window or a sun window.
func (dc *decoder) condition(n *core.Jnode) *model.Condition {
	if !dc.checkTime() || !dc.object(n, "condition") {
		return nil
	}
	c := &model.Condition{Ptr: n.Ptr, ID: dc.id(n)}
	key, ok := dc.kindKey(n, "a condition", model.ConditionKeys)
	if !ok {
		dc.fields(n, "a condition", model.UnionOf(model.ConditionKinds, func(k model.ConditionKindInfo) []string { return k.Members }))
		return c
	}
	c.Kind = model.ConditionKind(key)
	row, _ := model.ConditionKindOf(c.Kind)
	dc.fields(n, "a "+key+" condition", row.Members)
	v := n.Get(key)
	switch c.Kind {
	case model.CondExpr:
		c.Expr = dc.exprField(v, "expr")
	case model.CondTime:
		c.Window = dc.timeWindow(v, row.Window)
	case model.CondSun:
		c.Window = dc.sunWindow(v, row.Window)
	}
	return c
}

// timeWindow decodes {"after"?, "before"?, "weekday"?}: clock times and
// weekday names, at least one of them.
func (dc *decoder) timeWindow(v *core.Jnode, members []string) *model.Window {
	if !dc.object(v, "time") {
		return nil
	}
	dc.fields(v, "a time condition", members)
	w := &model.Window{}
	for _, b := range []struct {
		key string
		to  *string
	}{{"after", &w.After}, {"before", &w.Before}} {
		x := v.Get(b.key)
		if x == nil {
			continue
		}
		s, ok := dc.str(x, b.key)
		switch {
		case !ok:
		case !validClock(s):
			dc.D.Add(core.CodeBadTime, x.Ptr, "e.g. \"22:00\" or \"06:30:00\"", "%s %q is not HH:MM or HH:MM:SS", b.key, s)
		default:
			*b.to = s
		}
	}
	if x := v.Get("weekday"); x != nil {
		w.Weekdays = dc.weekdays(x)
	}
	switch {
	case v.Get("after") == nil && v.Get("before") == nil && v.Get("weekday") == nil:
		dc.D.Add(core.CodeMissingField, v.Ptr, "e.g. {\"after\": \"22:00\", \"before\": \"06:00\"}", "a time condition needs after, before or weekday")
	case w.After != "" && w.After == w.Before:
		dc.D.Add(core.CodeConstraint, v.Get("before").Ptr, "drop one bound, or give a window such as after 22:00 before 06:00", "after and before are both %s: the window is empty", w.After)
	}
	return w
}

// weekdays decodes a weekday name or a list of them.
func (dc *decoder) weekdays(x *core.Jnode) []time.Weekday {
	list := []*core.Jnode{x}
	if x.Kind == core.JArr {
		list = x.Vals
		if len(list) == 0 {
			dc.D.Add(core.CodeMissingField, x.Ptr, "", "weekday lists no day")
		}
	}
	var out []time.Weekday
	for _, d := range list {
		s, ok := dc.str(d, "weekday")
		if !ok {
			continue
		}
		i := slices.Index(model.WeekdayNames, strings.ToLower(s))
		if i < 0 {
			dc.D.Add(core.CodeConstraint, d.Ptr, core.HintFor(core.CloseMatches(strings.ToLower(s), model.WeekdayNames, 1)),
				"weekday %q is not one of %s", s, strings.Join(model.WeekdayNames[1:], ", ")+", sun")
			continue
		}
		if !slices.Contains(out, time.Weekday(i)) {
			out = append(out, time.Weekday(i))
		}
	}
	return out
}

// sunWindow decodes {"after"?, "after_offset"?, "before"?,
// "before_offset"?}: sun events with offsets, at least one bound.
func (dc *decoder) sunWindow(v *core.Jnode, members []string) *model.Window {
	if !dc.object(v, "sun") {
		return nil
	}
	dc.fields(v, "a sun condition", members)
	w := &model.Window{}
	for _, b := range []struct {
		key    string
		event  *string
		offset *time.Duration
	}{{"after", &w.After, &w.AfterOffset}, {"before", &w.Before, &w.BeforeOffset}} {
		if x := v.Get(b.key); x != nil {
			if s, ok := dc.str(x, b.key); ok {
				if s != clock.Sunrise && s != clock.Sunset {
					dc.D.Add(core.CodeConstraint, x.Ptr, core.HintFor(core.CloseMatches(s, []string{clock.Sunrise, clock.Sunset}, 1)), "%s must be \"sunrise\" or \"sunset\", got %q", b.key, s)
				} else {
					*b.event = s
				}
			}
		}
		if x := v.Get(b.key + "_offset"); x != nil {
			*b.offset = dc.constDuration(x, b.key+"_offset", true)
			if v.Get(b.key) == nil {
				dc.D.Add(core.CodeMissingField, v.Ptr, fmt.Sprintf("add \"%s\": \"sunset\" or \"sunrise\"", b.key), "%s_offset needs %s", b.key, b.key)
			}
		}
	}
	if v.Get("after") == nil && v.Get("before") == nil {
		dc.D.Add(core.CodeMissingField, v.Ptr, "e.g. {\"after\": \"sunset\", \"after_offset\": \"15m\"}", "a sun condition needs after or before")
	}
	return w
}
