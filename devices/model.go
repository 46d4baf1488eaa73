package devices

import (
	"encoding/json"
	"reflect"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
)

// devSpec is the source-neutral description of one device, from which its
// entries, routes and actions are derived.
type devSpec struct {
	id, name, desc string
	source, typ    string
	manufacturer   string
	modelName      string
	area           string
	tags           []string
	deviceTag      string // "device:<id>" when built ahead
	noDevice       bool   // notification channels: actions only
	local          bool   // a LocalDevice (a helper): PutLocal and RemoveLocal change it
	states         []stateSpec
	events         []eventSpec
	actions        []*action
	routes         []topicRoute
	entries        []pilotage.Entry // built once per spec, revision set
	built          bool
	fidelity       fidelity // how fully the source's description is modelled
}

// fidelity says how fully a device is modelled; a partial or unmodelled
// device's entry says why (tag and description).
type fidelity uint8

const (
	fidelityFull fidelity = iota
	fidelityPartial
	fidelityNone
)

// buildEntries derives the spec's entries once; specs are cached by their
// sources while their input is unchanged, so rebuilds stay cheap. The
// entries of a spec live in one slab, share their tag list and one string of
// revisions; equal schemas, names and descriptions are shared through in.
func (s *devSpec) buildEntries(in *interner) []pilotage.Entry {
	if s.built {
		return s.entries
	}
	n := len(s.states) + len(s.events) + len(s.actions)
	if !s.noDevice {
		n++
	}
	out := make([]pilotage.Entry, 0, n)
	if !s.noDevice {
		out = append(out, deviceEntry(s, in))
	}
	var tags []string
	if s.noDevice {
		tags = in.tagList([]string{"notify"})
	} else {
		tags = childTags(s, in)
	}
	for _, st := range s.states {
		out = append(out, stateEntry(s, st, tags, in))
	}
	for _, ev := range s.events {
		out = append(out, eventEntry(ev, tags, in))
	}
	for _, a := range s.actions {
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
	s.entries, s.built = out, true
	s.dropBuildState(in)
	return out
}

// dropBuildState forgets what only buildEntries reads: schemas, texts and
// event values. Of the states, rebuildSpecs still reads the unsupported.
func (s *devSpec) dropBuildState(in *interner) {
	var keep []stateSpec
	for _, st := range s.states {
		if st.unsupported != "" {
			keep = append(keep, stateSpec{id: st.id, unsupported: st.unsupported})
		}
	}
	s.states, s.events = keep, nil
	s.name, s.desc, s.typ, s.manufacturer, s.modelName, s.area, s.tags, s.deviceTag = "", "", "", "", "", "", nil, ""
	for _, a := range s.actions {
		dropSchemas(a.fields)
		a.fields = in.fieldMap(a.fields)
	}
}

// specChange replaces a device's spec: old nil adds it, new nil removes it.
type specChange struct{ old, new *devSpec }

type stateSpec struct {
	id, name, desc string
	schema         map[string]any
	unsupported    string
	// class is what the state measures or detects, as Home Assistant's
	// device_class names it (occupancy, door, temperature): the entry's
	// "class:<x>" tag, which a catalog param can require.
	class string
}

type eventSpec struct {
	id, name, desc string
	values         []string
}

func readHints() pilotage.RiskHints { return pilotage.HintsOf(pilotage.RiskRead) }

func deviceEntry(s *devSpec, in *interner) pilotage.Entry {
	tags := []string{in.concat("source:", s.source)}
	if s.typ != "" {
		tags = append(tags, in.concat("type:", s.typ))
	}
	if s.manufacturer != "" {
		tags = append(tags, in.concat("manufacturer:", s.manufacturer))
	}
	if s.modelName != "" {
		tags = append(tags, in.concat("model:", s.modelName))
	}
	if s.area != "" {
		tags = append(tags, in.concat("area:", s.area))
	}
	for _, t := range s.tags {
		tags = append(tags, in.str(t))
	}
	return pilotage.Entry{ID: s.id, Kind: pilotage.KindDevice, Name: s.name, Description: in.str(s.desc),
		Tags: in.tagList(tags), Risk: pilotage.RiskRead, RiskHints: readHints()}
}

// childTags is the tag list shared by the states, events and actions of a
// device.
func childTags(s *devSpec, in *interner) []string {
	dt := s.deviceTag
	if dt == "" {
		dt = "device:" + s.id
	}
	tags := make([]string, 0, 3)
	tags = append(tags, dt, in.concat("source:", s.source))
	if s.area != "" {
		tags = append(tags, in.concat("area:", s.area))
	}
	return tags[:len(tags):len(tags)]
}

func stateEntry(s *devSpec, st stateSpec, tags []string, in *interner) pilotage.Entry {
	desc := st.desc
	if st.class != "" {
		tags = append(tags[:len(tags):len(tags)], in.concat("class:", st.class))
	}
	if st.unsupported != "" {
		tags = append(tags[:len(tags):len(tags)], "unsupported")
		desc = strings.TrimSpace(desc + " Live value unsupported: " + st.unsupported + ".")
	}
	return pilotage.Entry{ID: st.id, Kind: pilotage.KindState, Name: in.str(st.name), Description: in.str(desc),
		Tags: tags, OutputSchema: in.raw(mustJSON(st.schema)), Risk: pilotage.RiskRead, RiskHints: readHints()}
}

func eventEntry(ev eventSpec, tags []string, in *interner) pilotage.Entry {
	schema := map[string]any{"type": "string"}
	if len(ev.values) > 0 {
		schema["enum"] = ev.values
	}
	return pilotage.Entry{ID: ev.id, Kind: pilotage.KindEvent, Name: in.str(ev.name), Description: in.str(ev.desc),
		Tags: tags, OutputSchema: in.raw(mustJSON(schema)), Risk: pilotage.RiskRead, RiskHints: readHints()}
}

func actionEntry(a *action, tags []string, in *interner) pilotage.Entry {
	return pilotage.Entry{ID: a.id, Kind: pilotage.KindAction, Name: a.name, Description: a.desc,
		Tags: tags, Callable: true, InputSchema: in.raw(mustJSON(a.inputSchema())), Risk: a.risk, RiskHints: pilotage.HintsOf(a.risk)}
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// slug turns a friendly name into an id segment: lowercase ASCII letters,
// digits and '_' (everything else becomes '_', runs collapse, ends trimmed).
func slug(s string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(s) {
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
	tagPartial    = "partial"
	tagUnmodelled = "unmodelled"
)

// stringsOf is the strings among vs.
func stringsOf(vs []any) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// equalValues reports whether two live values are equal.
func equalValues(a, b any) bool {
	switch av := a.(type) {
	case nil:
		return b == nil
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case float64:
		bv, ok := b.(float64)
		return ok && av == bv
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv
	}
	return reflect.DeepEqual(a, b)
}
