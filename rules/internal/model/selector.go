package model

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
	Resolved []string
	Hints    pilotage.RiskHints
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

// MaxSelectors bounds the selectors of one program: validation resolves
// each against the whole catalog.
const MaxSelectors = 32

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
		if !ok || e.Kind != kind || s.Name != "" && nameOf(id) != s.Name {
			continue
		}
		dev, _ := get(deviceOf(id))
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
// is one s addresses (its name aside). Without a name, the tag must be
// the entry's own ("class:occupancy" on the state, not on its device):
// that is what reads the occupancy of a Zigbee2MQTT sensor and of a Home
// Assistant one whose state is named after the entity.
func (s *Selector) Matches(tags, devTags []string) bool {
	if s.Area != "" && !strings.EqualFold(tagValue(tags, "area:", devTags), s.Area) {
		return false
	}
	if s.Type != "" && tagValue(devTags, "type:", nil) != s.Type {
		return false
	}
	if s.Name == "" {
		return slices.Contains(tags, s.Tag)
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

// deviceOf is the device part of an entry id ("hall_light.set" →
// "hall_light").
func deviceOf(id string) string {
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
func (s *Selector) Describe() string { return s.Quantified("every") }

// Quantified is Describe with another quantifier ("any").
func (s *Selector) Quantified(quant string) string {
	var b []byte
	if s.Name == "" { // states by their own tag, whatever their names
		b = []byte(quant + " state tagged " + strconv.Quote(s.Tag))
		if s.Area != "" || s.Type != "" {
			b = append(b, " of a device"...)
		}
	} else {
		b = []byte(strconv.Quote(s.Name) + " of " + quant + " device")
	}
	if s.Area != "" {
		b = append(b, " in area "...)
		b = strconv.AppendQuote(b, s.Area)
	}
	if s.Type != "" {
		b = append(b, " of type "...)
		b = strconv.AppendQuote(b, s.Type)
	}
	if s.Tag != "" && s.Name != "" {
		b = append(b, " tagged "...)
		b = strconv.AppendQuote(b, s.Tag)
	}
	return string(b)
}

// NowText is the set s resolved to when validated, as plans say it.
func (s *Selector) NowText() string {
	if len(s.Resolved) == 0 {
		return "matches nothing now"
	}
	return "now: " + strings.Join(s.Resolved, ", ")
}

// Selector is what a state or numeric trigger by selector watches (nil
// for a trigger on one entity): the engine resolves it against the live
// catalog, in the rule owner's scope.
func (t *RunTrigger) Selector() *Selector {
	if t.more == nil {
		return nil
	}
	return t.more.sel
}

// Watched is the state a test run fires the trigger on: its entity, or
// the first a selector resolved to when validated.
func (t *RunTrigger) Watched() string {
	if sel := t.Selector(); sel != nil && len(sel.Resolved) > 0 {
		return sel.Resolved[0]
	}
	return t.EntityID
}

// Members is s as written, its entry's name under nameKey ("action" or
// "property"): what a plan step shows.
func (s *Selector) Members(nameKey string) map[string]string {
	m := map[string]string{nameKey: s.Name}
	for k, v := range map[string]string{"area": s.Area, "type": s.Type, "tag": s.Tag} {
		if v != "" {
			m[k] = v
		}
	}
	return m
}
