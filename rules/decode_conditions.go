package rules

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// condition decodes one condition: its kind key (ConditionKinds) selects
// an expression, a time window or a sun window.
func (dc *decoder) condition(n *jnode) *Condition {
	if !dc.checkTime() || !dc.object(n, "condition") {
		return nil
	}
	c := &Condition{Ptr: n.ptr, ID: dc.id(n)}
	key, ok := dc.kindKey(n, "a condition", conditionKeys)
	if !ok {
		dc.fields(n, "a condition", unionOf(ConditionKinds, func(k ConditionKindInfo) []string { return k.Members }))
		return c
	}
	c.Kind = ConditionKind(key)
	row, _ := conditionKind(c.Kind)
	dc.fields(n, "a "+key+" condition", row.Members)
	v := n.get(key)
	switch c.Kind {
	case CondExpr:
		c.Expr = dc.exprField(v, "expr")
	case CondTime:
		c.Window = dc.timeWindow(v, row.Window)
	case CondSun:
		c.Window = dc.sunWindow(v, row.Window)
	}
	return c
}

// timeWindow decodes {"after"?, "before"?, "weekday"?}: clock times and
// weekday names, at least one of them.
func (dc *decoder) timeWindow(v *jnode, members []string) *Window {
	if !dc.object(v, "time") {
		return nil
	}
	dc.fields(v, "a time condition", members)
	w := &Window{}
	for _, b := range []struct {
		key string
		to  *string
	}{{"after", &w.After}, {"before", &w.Before}} {
		x := v.get(b.key)
		if x == nil {
			continue
		}
		s, ok := dc.str(x, b.key)
		switch {
		case !ok:
		case !validClock(s):
			dc.d.add(CodeBadTime, x.ptr, "e.g. \"22:00\" or \"06:30:00\"", "%s %q is not HH:MM or HH:MM:SS", b.key, s)
		default:
			*b.to = s
		}
	}
	if x := v.get("weekday"); x != nil {
		w.Weekdays = dc.weekdays(x)
	}
	switch {
	case v.get("after") == nil && v.get("before") == nil && v.get("weekday") == nil:
		dc.d.add(CodeMissingField, v.ptr, "e.g. {\"after\": \"22:00\", \"before\": \"06:00\"}", "a time condition needs after, before or weekday")
	case w.After != "" && w.After == w.Before:
		dc.d.add(CodeConstraint, v.get("before").ptr, "drop one bound, or give a window such as after 22:00 before 06:00", "after and before are both %s: the window is empty", w.After)
	}
	return w
}

// weekdays decodes a weekday name or a list of them.
func (dc *decoder) weekdays(x *jnode) []time.Weekday {
	list := []*jnode{x}
	if x.kind == jArr {
		list = x.vals
		if len(list) == 0 {
			dc.d.add(CodeMissingField, x.ptr, "", "weekday lists no day")
		}
	}
	var out []time.Weekday
	for _, d := range list {
		s, ok := dc.str(d, "weekday")
		if !ok {
			continue
		}
		i := slices.Index(weekdayNames, strings.ToLower(s))
		if i < 0 {
			dc.d.add(CodeConstraint, d.ptr, hintFor(closeMatches(strings.ToLower(s), weekdayNames, 1)),
				"weekday %q is not one of %s", s, strings.Join(weekdayNames[1:], ", ")+", sun")
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
func (dc *decoder) sunWindow(v *jnode, members []string) *Window {
	if !dc.object(v, "sun") {
		return nil
	}
	dc.fields(v, "a sun condition", members)
	w := &Window{}
	for _, b := range []struct {
		key    string
		event  *string
		offset *time.Duration
	}{{"after", &w.After, &w.AfterOffset}, {"before", &w.Before, &w.BeforeOffset}} {
		if x := v.get(b.key); x != nil {
			if s, ok := dc.str(x, b.key); ok {
				if s != Sunrise && s != Sunset {
					dc.d.add(CodeConstraint, x.ptr, hintFor(closeMatches(s, []string{Sunrise, Sunset}, 1)), "%s must be \"sunrise\" or \"sunset\", got %q", b.key, s)
				} else {
					*b.event = s
				}
			}
		}
		if x := v.get(b.key + "_offset"); x != nil {
			*b.offset = dc.constDuration(x, b.key+"_offset", true)
			if v.get(b.key) == nil {
				dc.d.add(CodeMissingField, v.ptr, fmt.Sprintf("add \"%s\": \"sunset\" or \"sunrise\"", b.key), "%s_offset needs %s", b.key, b.key)
			}
		}
	}
	if v.get("after") == nil && v.get("before") == nil {
		dc.d.add(CodeMissingField, v.ptr, "e.g. {\"after\": \"sunset\", \"after_offset\": \"15m\"}", "a sun condition needs after or before")
	}
	return w
}
