package model

import (
	"encoding/json"
	"strings"

	"github.com/pilothouse/pilothouse/internal/shown"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Spec is the source-neutral description of one device, from which its
// entries, routes and actions are derived.
type Spec struct {
	ID, Name, Desc string
	Source, Typ    string
	Manufacturer   string
	ModelName      string
	Area           string
	Tags           []string
	DeviceTag      string // "device:<id>" when built ahead
	NoDevice       bool   // notification channels: actions only
	Local          bool   // a LocalDevice (a helper): PutLocal and RemoveLocal change it
	States         []StateSpec
	Events         []EventSpec
	Actions        []*Action
	Routes         []TopicRoute
	Entries        []pilotage.Entry // built once per spec, revision set
	built          bool
	Fidelity       fidelity // how fully the source's description is modelled
	// A Zigbee2MQTT device's own topic (<base>/<friendly name>) and its
	// IEEE address, which Zigbee2MQTT takes in place of the name: the
	// catalog maps command topics naming either to the device.
	Z2MTopic, Z2MAddr string
	// Group is set on a Zigbee2MQTT group: a command to its topic
	// reaches every member, so any action writing there is as risky.
	Group *GroupRisk
	// Avail is the availability topics a Home Assistant device's
	// entities name: until one reports, the device reads offline, as Home
	// Assistant shows it unavailable. Expire is its states with an
	// expire_after: each reads offline until its first message, and again
	// expire_after after its last.
	Avail  []string
	Expire []string
	// Z2MAvail is a Zigbee2MQTT device's availability topic: declared
	// like Avail while the bridge's config (bridge/info) has availability
	// on, as Home Assistant's Zigbee2MQTT discovery then names it.
	Z2MAvail string
}

// GroupRisk is how risky a command to a Zigbee2MQTT group is: the
// highest risk among its members' actions (security when a member is
// not known), and why ("" when no member is riskier than control).
type GroupRisk struct {
	Hints pilotage.RiskHints
	Why   string
}

// fidelity says how fully a device is modelled; a partial or unmodelled
// device's entry says why (tag and description).
type fidelity uint8

const (
	fidelityFull fidelity = iota
	FidelityPartial
	FidelityNone
)

// BuildEntries derives the spec's entries once; specs are cached by their
// sources while their input is unchanged, so rebuilds stay cheap. The
// entries of a spec live in one slab, share their tag list and one string of
// revisions; equal schemas, names and descriptions are shared through in.
func (s *Spec) BuildEntries(in *Interner) []pilotage.Entry {
	if s.built {
		return s.Entries
	}
	n := len(s.States) + len(s.Events) + len(s.Actions)
	if !s.NoDevice {
		n++
	}
	out := make([]pilotage.Entry, 0, n)
	if !s.NoDevice {
		out = append(out, deviceEntry(s, in))
	}
	var tags []string
	if s.NoDevice {
		tags = in.tagList([]string{"notify"})
	} else {
		tags = childTags(s, in)
	}
	for _, st := range s.States {
		out = append(out, stateEntry(s, st, tags, in))
	}
	for _, ev := range s.Events {
		out = append(out, eventEntry(ev, tags, in))
	}
	for _, a := range s.Actions {
		out = append(out, actionEntry(a, tags, in))
	}
	revs := make([]byte, 0, 24*len(out))
	ends := make([]int, len(out))
	for i := range out {
		revs = append(revs, out[i].ContentHash()...)
		ends[i] = len(revs)
	}
	all, off := string(revs), 0
	for i := range out {
		out[i].Revision = all[off:ends[i]]
		off = ends[i]
	}
	s.Entries, s.built = out, true
	s.dropBuildState(in)
	return out
}

// dropBuildState forgets what only buildEntries reads: schemas, texts and
// event values. Of the states, rebuildSpecs still reads the unsupported.
func (s *Spec) dropBuildState(in *Interner) {
	var keep []StateSpec
	for _, st := range s.States {
		if st.Unsupported != "" {
			keep = append(keep, StateSpec{ID: st.ID, Unsupported: st.Unsupported})
		}
	}
	s.States, s.Events = keep, nil
	s.Name, s.Desc, s.Typ, s.Manufacturer, s.ModelName, s.Area, s.Tags, s.DeviceTag = "", "", "", "", "", "", nil, ""
	for _, a := range s.Actions {
		dropSchemas(a.Fields)
		a.Fields = in.fieldMap(a.Fields)
	}
}

// SpecChange replaces a device's spec: old nil adds it, new nil removes it.
type SpecChange struct{ Old, New *Spec }

type StateSpec struct {
	ID, Name, Desc string
	Schema         map[string]any
	Unsupported    string
	// class is what the state measures or detects, as Home Assistant's
	// device_class names it (occupancy, door, temperature): the entry's
	// "class:<x>" tag, which a catalog param can require.
	Class string
}

type EventSpec struct {
	ID, Name, Desc string
	Values         []string
}

func readHints() pilotage.RiskHints { return pilotage.HintsOf(pilotage.RiskRead) }

func deviceEntry(s *Spec, in *Interner) pilotage.Entry {
	tags := []string{in.concat("source:", s.Source)}
	if s.Typ != "" {
		tags = append(tags, in.concat("type:", s.Typ))
	}
	if s.Manufacturer != "" {
		tags = append(tags, in.concat("manufacturer:", s.Manufacturer))
	}
	if s.ModelName != "" {
		tags = append(tags, in.concat("model:", s.ModelName))
	}
	if s.Area != "" {
		tags = append(tags, in.concat("area:", s.Area))
	}
	for _, t := range s.Tags {
		tags = append(tags, in.Str(t))
	}
	return pilotage.Entry{ID: s.ID, Kind: pilotage.KindDevice, Name: Shown(s.Name), Description: in.Str(s.Desc),
		Tags: in.tagList(tags), Risk: pilotage.RiskRead, RiskHints: readHints()}
}

// childTags is the tag list shared by the states, events and actions of a
// device.
func childTags(s *Spec, in *Interner) []string {
	dt := s.DeviceTag
	if dt == "" {
		dt = "device:" + s.ID
	}
	tags := make([]string, 0, 3)
	tags = append(tags, dt, in.concat("source:", s.Source))
	if s.Area != "" {
		tags = append(tags, in.concat("area:", s.Area))
	}
	return tags[:len(tags):len(tags)]
}

func stateEntry(s *Spec, st StateSpec, tags []string, in *Interner) pilotage.Entry {
	desc := st.Desc
	if st.Class != "" {
		tags = append(tags[:len(tags):len(tags)], in.concat("class:", st.Class))
	}
	if st.Unsupported != "" {
		tags = append(tags[:len(tags):len(tags)], "unsupported")
		desc = strings.TrimSpace(desc + " Live value unsupported: " + st.Unsupported + ".")
	}
	return pilotage.Entry{ID: st.ID, Kind: pilotage.KindState, Name: in.Str(Shown(st.Name)), Description: in.Str(desc),
		Tags: tags, OutputSchema: in.raw(mustJSON(st.Schema)), Risk: pilotage.RiskRead, RiskHints: readHints()}
}

func eventEntry(ev EventSpec, tags []string, in *Interner) pilotage.Entry {
	schema := map[string]any{"type": "string"}
	if len(ev.Values) > 0 {
		schema["enum"] = ev.Values
	}
	return pilotage.Entry{ID: ev.ID, Kind: pilotage.KindEvent, Name: in.Str(Shown(ev.Name)), Description: in.Str(ev.Desc),
		Tags: tags, OutputSchema: in.raw(mustJSON(schema)), Risk: pilotage.RiskRead, RiskHints: readHints()}
}

func actionEntry(a *Action, tags []string, in *Interner) pilotage.Entry {
	return pilotage.Entry{ID: a.ID, Kind: pilotage.KindAction, Name: Shown(a.name), Description: a.Desc,
		Tags: tags, Callable: true, InputSchema: in.raw(mustJSON(a.inputSchema())), Risk: a.Risk, RiskHints: pilotage.HintsOf(a.Risk)}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// maxShown bounds a name as the catalog shows it, in runes.
const maxShown = 128

// Shown is a name from the bus as the catalog shows it: without the
// characters not shown as themselves (a right-to-left override makes
// "kcol" read "lock", a NUL or a BOM hides in a copy), at most maxShown
// runes.
func Shown(s string) string { return shown.Clean(s, maxShown) }

// maxSlug bounds an id segment made from a name, in bytes.
const maxSlug = 64

// Slug turns a friendly name into an id segment: lowercase ASCII letters,
// digits and '_' (everything else becomes '_', runs collapse, ends
// trimmed), at most maxSlug bytes.
func Slug(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(s) {
		if b.Len() >= maxSlug {
			break
		}
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			under = false
			continue
		}
		if !under && b.Len() > 0 {
			b.WriteByte('_')
			under = true
		}
	}
	return strings.TrimSuffix(b.String(), "_")
}

// Tags of a device entry that is not fully modelled; its description says
// what is missing.
const (
	TagPartial    = "partial"
	TagUnmodelled = "unmodelled"
)

// StringsOf is the strings among vs.
func StringsOf(vs []any) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
