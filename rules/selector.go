package rules

import (
	"slices"
	"strconv"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Selector addresses catalog entries by where and what their device is
// rather than by id, so a rule keeps working when a device is swapped:
// every entry of one kind named Name (an action such as "set", a state
// such as "occupancy") of a device matching each of Area, Type and Tag
// that is given (at least one is). It stands where an id goes: a call
// step's "call" ({"area": "living", "type": "light", "action": "set"}) or
// a state trigger's "state" ({"area": "hall", "property": "occupancy"}).
// Its members are constants, so validation knows every one; what it
// resolves to is decided at run time, in the rule owner's scope.
type Selector struct {
	Area string // the entry's (or its device's) area:<x> tag, any case
	Type string // its device's type:<x> tag
	Tag  string // any tag of the entry or its device, exactly
	Name string // the entry's own name: its id after the device part

	// Set by validation: what the selector resolved to then (sorted)
	// and the aggregate risk of those entries (the plan shows both).
	now   []string
	hints pilotage.RiskHints
}

// SelectorMembers are the members of a selector object, by where it
// stands: the member naming the entry ("action" in a call, "property" in
// a state trigger) beside the device filters. The closed-sets guide
// lists them.
var SelectorMembers = struct {
	Filters        []string
	Call, Property string
}{[]string{"area", "type", "tag"}, "action", "property"}

// MaxSelected bounds how many entries a selector may address: a call
// step publishes one command per entry.
const MaxSelected = 64

// Selecting is a Catalog or World that resolves selectors itself (the
// engine's scoped views: they know every device's tags and remember
// what a selector resolved to).
type Selecting interface {
	Select(kind pilotage.Kind, s *Selector) []string
}

// Resolve lists the ids of the entries of kind that s addresses in cat,
// sorted.
func Resolve(cat Catalog, kind pilotage.Kind, s *Selector) []string {
	if sc, ok := cat.(Selecting); ok {
		return sc.Select(kind, s)
	}
	return ScanSelect(cat.IDs(), cat.Get, kind, s)
}

// ScanSelect resolves s by visiting ids (sorted) and their entries.
func ScanSelect(ids []string, get func(string) (*pilotage.Entry, bool), kind pilotage.Kind, s *Selector) []string {
	var out []string
	for _, id := range ids {
		e, ok := get(id)
		if !ok || e.Kind != kind || nameOf(id) != s.Name {
			continue
		}
		dev, _ := get(DeviceOf(id))
		var devTags []string
		if dev != nil {
			devTags = dev.Tags
		}
		if s.Matches(e.Tags, devTags) {
			out = append(out, id)
		}
	}
	return out
}

// Matches reports whether an entry with tags, of a device with devTags,
// is one s addresses (its name aside).
func (s *Selector) Matches(tags, devTags []string) bool {
	if s.Area != "" && !strings.EqualFold(tagValue(tags, "area:", devTags), s.Area) {
		return false
	}
	if s.Type != "" && tagValue(devTags, "type:", nil) != s.Type {
		return false
	}
	return s.Tag == "" || slices.Contains(tags, s.Tag) || slices.Contains(devTags, s.Tag)
}

// tagValue is the value of the first tag with prefix in tags, else in
// more ("" = none).
func tagValue(tags []string, prefix string, more []string) string {
	for _, list := range [][]string{tags, more} {
		for _, t := range list {
			if strings.HasPrefix(t, prefix) {
				return t[len(prefix):]
			}
		}
	}
	return ""
}

// DeviceOf is the device part of an entry id ("hall_light.set" →
// "hall_light").
func DeviceOf(id string) string {
	if i := strings.IndexByte(id, '.'); i >= 0 {
		return id[:i]
	}
	return id
}

// nameOf is the entry's own name: its id after the device part.
func nameOf(id string) string {
	if i := strings.IndexByte(id, '.'); i >= 0 {
		return id[i+1:]
	}
	return ""
}

// Key identifies s by its members (memo tables key on it).
func (s *Selector) Key() string {
	return s.Area + "\x00" + s.Type + "\x00" + s.Tag + "\x00" + s.Name
}

// Describe is s as plans and messages say it: `"set" of every device
// in area "living" of type "light"`.
func (s *Selector) Describe() string { return s.describe("every") }

func (s *Selector) describe(quant string) string {
	b := []byte(strconv.Quote(s.Name) + " of " + quant + " device")
	if s.Area != "" {
		b = append(b, " in area "...)
		b = strconv.AppendQuote(b, s.Area)
	}
	if s.Type != "" {
		b = append(b, " of type "...)
		b = strconv.AppendQuote(b, s.Type)
	}
	if s.Tag != "" {
		b = append(b, " tagged "...)
		b = strconv.AppendQuote(b, s.Tag)
	}
	return string(b)
}

// nowText is the set s resolved to when validated, as plans say it.
func (s *Selector) nowText() string {
	if len(s.now) == 0 {
		return "none now"
	}
	return "now: " + strings.Join(s.now, ", ")
}

// selector decodes a selector object standing in member what; nameKey is
// the member naming the entry ("action" or "property").
func (dc *decoder) selector(v *jnode, what, nameKey string) *Selector {
	allowed := append(slices.Clone(SelectorMembers.Filters), nameKey)
	dc.fields(v, "a selector ("+what+")", allowed)
	s := &Selector{}
	dst := []*string{&s.Area, &s.Type, &s.Tag, &s.Name}
	for i, k := range allowed {
		n := v.get(k)
		if n == nil {
			continue
		}
		str, ok := dc.str(n, what+"."+k)
		switch {
		case !ok:
		case strings.Contains(str, "{{"):
			dc.d.add(CodeConstraint, n.ptr, "write the value itself, e.g. \"living\"", "a selector's %s is a constant: templates are not allowed here, so every entry it may address is known when the program is checked", k)
		case str == "":
			dc.d.add(CodeConstraint, n.ptr, "", "a selector's %s is not empty", k)
		default:
			*dst[i] = str
		}
	}
	if v.get(nameKey) == nil {
		dc.d.add(CodeMissingField, v.ptr, `e.g. {"area": "living", "type": "light", "`+nameKey+`": "set"}`, "a selector needs %q: which %s of each device it addresses", nameKey, nameKey)
	}
	if s.Area == "" && s.Type == "" && s.Tag == "" && v.get("area") == nil && v.get("type") == nil && v.get("tag") == nil {
		dc.d.add(CodeMissingField, v.ptr, `e.g. {"area": "living", "`+nameKey+`": "..."}`, "a selector needs at least one of area, type, tag")
	}
	return s
}

// triggerSubject is what a state or numeric trigger watches, as plans
// say it: its entity, or "any of <selector> (now: …)".
func triggerSubject(t *RunTrigger) string {
	if sel := t.Selector(); sel != nil {
		return sel.describe("any") + " (" + sel.nowText() + ")"
	}
	return t.entity
}

// SetSelectBase makes a test run resolve selectors as a live run would,
// against the caller's catalog (nil: the set validation found).
func (w *SimWorld) SetSelectBase(f func(kind pilotage.Kind, s *Selector) []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.selectBase = f
}

// Select implements Selecting for a test run.
func (w *SimWorld) Select(kind pilotage.Kind, s *Selector) []string {
	w.mu.Lock()
	f := w.selectBase
	w.mu.Unlock()
	if f == nil {
		return s.now
	}
	return f(kind, s)
}

// selectorTable writes the selector members (SelectorMembers).
func selectorTable(w writeFunc) {
	w("\n## Selectors\n\nAn object where an id goes addresses entries by their device: ")
	w("in a call step's `call` (actions) and a state or numeric trigger's `state` (states).\n\n")
	w("| where | names the entry | device filters (at least one, constants) |\n|---|---|---|\n")
	w("| `call` | `%s` | %s |\n", SelectorMembers.Call, codeList(SelectorMembers.Filters))
	w("| trigger `state` | `%s` | %s |\n", SelectorMembers.Property, codeList(SelectorMembers.Filters))
	w("\n`area` matches the `area:<x>` tag (any case), `type` the device's `type:<x>`, `tag` any tag exactly. ")
	w("Resolved at every run in the rule owner's scope (at most %d entries); a trigger by selector cannot hold (`for`).\n", MaxSelected)
}
