package z2m

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/pilotage"
)

// Access bits of a Zigbee2MQTT expose.
const (
	AccessPublished = 1
	AccessSet       = 2
	accessGet       = 4
)

// z2mBuilder turns the exposes of one definition into states, events, a
// set action and a get action.
type z2mBuilder struct {
	in       *model.Interner
	spec     *model.Spec
	props    map[string]z2mProp
	stateIdx map[string]int
	unions   map[string]bool   // state keys whose schema is an anyOf of shapes
	act      *model.Action     // <name>/set
	get      *model.Action     // <name>/get
	sids     map[string]string // key -> id
	kinds    map[string]bool   // the specific exposes seen (light, cover …)
	gaps     []string          // what could not be modelled, for the entry and the log
	// what deviceType reads
	hasAction, hasBinary, securityIn, garage, armMode bool
}

func newZ2MBuilder(in *model.Interner, s *model.Spec, n z2mNames) *z2mBuilder {
	b := &z2mBuilder{in: in, spec: s, props: map[string]z2mProp{}, stateIdx: map[string]int{}, sids: n.sids,
		unions: map[string]bool{}, kinds: map[string]bool{}}
	b.act = model.NewAction(n.setID, n.setName, "", pilotage.RiskControl)
	b.get = model.NewAction(n.getID, n.getName, "", pilotage.RiskRead)
	b.get.Affects = nil
	return b
}

// routedKeys collects the keys walk gives an id to.
func routedKeys(e Expose, keys map[string]bool) {
	switch e.Type {
	case "composite", "binary", "numeric", "enum", "text", "list":
		if k := ExposeKey(e); k != "" {
			keys[k] = true
		}
	default:
		for _, f := range e.Features {
			routedKeys(f, keys)
		}
	}
}

// sid is the state (or event) id of a key of the device's JSON state.
func (b *z2mBuilder) sid(key string) string {
	if id, ok := b.sids[key]; ok {
		return id
	}
	return b.spec.ID + "." + model.Slug(key)
}

func (b *z2mBuilder) gap(format string, args ...any) {
	b.gaps = append(b.gaps, fmt.Sprintf(format, args...))
}

func (b *z2mBuilder) walk(e Expose) {
	switch e.Type {
	case "light", "switch", "lock", "cover", "climate", "fan":
		b.kinds[e.Type] = true
		for _, f := range e.Features {
			b.walk(f)
		}
		if e.Type == "light" {
			b.lightExtras(e)
		}
	case "composite":
		b.composite(e)
	case "binary", "numeric", "enum", "text", "list":
		b.leaf(e)
	default:
		if len(e.Features) == 0 {
			b.gap("expose %q of unknown type %q", ExposeKey(e), e.Type)
		}
		for _, f := range e.Features {
			b.walk(f)
		}
	}
	b.notice(e)
}

// notice records what deviceType reads.
func (b *z2mBuilder) notice(e Expose) {
	switch {
	case e.Name == "warning" || e.Name == "alarm" && e.Access&AccessSet != 0:
		b.securityIn = true
	case e.Name == "garage_door_contact":
		b.garage = true
	case e.Name == "arm_mode" && e.Access&AccessSet != 0:
		b.armMode = true
	}
}

func ExposeKey(e Expose) string {
	if e.Property != "" {
		return e.Property
	}
	return e.Name
}

func exposeDesc(e Expose) string {
	d := e.Description
	if d == "" {
		d = e.Label
	}
	if e.Endpoint != "" && !strings.Contains(d, e.Endpoint) {
		d = strings.TrimSpace(d + " (endpoint " + e.Endpoint + ")")
	}
	return d
}

func exposeName(e Expose) string {
	n := e.Label
	if n == "" {
		n = e.Name
	}
	if e.Endpoint != "" {
		n += " " + e.Endpoint
	}
	return n
}

func (b *z2mBuilder) leaf(e Expose) {
	key := b.in.Str(ExposeKey(e))
	if key == "" {
		b.gap("a %s expose without property or name", e.Type)
		return
	}
	sid := b.sid(key)
	if e.Access&AccessPublished != 0 {
		if key == "action" && e.Type == "enum" && e.Access&AccessSet == 0 {
			b.hasAction = true
			b.spec.Events = append(b.spec.Events, model.EventSpec{ID: sid, Name: exposeName(e), Desc: exposeDesc(e), Values: model.StringsOf(e.Values)})
			b.props[key] = z2mProp{id: sid, event: true}
		} else {
			b.addState(key, sid, exposeName(e), exposeDesc(e), stateSchema(e))
			if _, routed := b.props[key]; !routed {
				b.props[key] = z2mProp{id: sid, number: e.Type == "numeric"}
			}
			if e.Type == "binary" {
				b.hasBinary = true
			}
		}
	}
	if e.Access&AccessSet != 0 {
		b.addField(key, inputField(e))
	}
	b.addGet(key, e)
}

func (b *z2mBuilder) composite(e Expose) {
	key := b.in.Str(ExposeKey(e))
	if key == "" {
		b.gap("a composite expose without property or name")
		return
	}
	if e.Access&AccessPublished != 0 {
		// Published as one object, whatever its features' own access
		// says (a hysteresis {low, high} whose members are set-only).
		b.addState(key, b.sid(key), exposeName(e), exposeDesc(e), stateSchema(e))
		b.props[key] = z2mProp{id: b.sid(key)}
	}
	if e.Access&AccessSet != 0 {
		b.addField(key, compositeField(e))
	}
	b.addGet(key, e)
}

// addState adds the state of key; a key exposed again merges into it: the
// properties of two objects (colour as xy and as hs), else a union of the
// shapes (a cover state both OPEN/CLOSE/STOP and open/close/stop).
func (b *z2mBuilder) addState(key, sid, name, desc string, schema map[string]any) {
	i, ok := b.stateIdx[key]
	if !ok {
		b.stateIdx[key] = len(b.spec.States)
		b.spec.States = append(b.spec.States, model.StateSpec{ID: sid, Name: name, Desc: desc, Schema: schema, Class: model.Z2MClasses[key]})
		return
	}
	old := b.spec.States[i].Schema
	if mergeObjectSchema(old, schema) || sameJSON(old, schema) {
		return
	}
	alts := []any{old}
	if b.unions[key] {
		alts = old["anyOf"].([]any)
	}
	for _, a := range alts {
		if sameJSON(a, schema) {
			return
		}
	}
	u := map[string]any{"anyOf": append(alts, schema)}
	if d := descOf(old); d != "" {
		u["description"] = d
	}
	b.spec.States[i].Schema = u
	b.unions[key] = true
}

func descOf(schema map[string]any) string {
	d, _ := schema["description"].(string)
	return d
}

// mergeObjectSchema adds src's properties to dst when both are objects.
func mergeObjectSchema(dst, src map[string]any) bool {
	dp, ok1 := dst["properties"].(map[string]any)
	sp, ok2 := src["properties"].(map[string]any)
	if !ok1 || !ok2 {
		return false
	}
	for k, v := range sp {
		if _, ok := dp[k]; !ok {
			dp[k] = v
		}
	}
	return true
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// addField adds the set field of key. A key exposed again never replaces
// the first: two closed objects merge their properties, equal shapes stay
// one, different shapes become a union.
func (b *z2mBuilder) addField(key string, f *model.Field) {
	old, ok := b.act.Fields[key]
	switch {
	case !ok:
		b.act.Fields[key] = f
	case old.Kind == "object" && f.Kind == "object" && !old.Open && !f.Open:
		for k, p := range f.Props {
			if _, dup := old.Props[k]; !dup {
				old.Props[k] = p
			}
		}
		*old = *model.ObjField(descOf(old.Schema), old.Props)
	case sameJSON(old.Schema, f.Schema):
	default:
		b.act.Fields[key] = model.UnionField(descOf(old.Schema), old, f)
	}
	if _, published := b.stateIdx[key]; published {
		b.act.Affects[key] = b.sid(key)
	}
}

// addGet lets the get action ask for key when Zigbee2MQTT can read it.
func (b *z2mBuilder) addGet(key string, e Expose) {
	if e.Access&accessGet == 0 {
		return
	}
	if _, dup := b.get.Fields[key]; !dup {
		b.get.Fields[key] = model.EnumField(`"" asks the device for its current `+exposeName(e), []any{""})
	}
}

// finish completes the actions and the marks of what is missing.
func (b *z2mBuilder) finish(log *slog.Logger, d *Device, n z2mNames) {
	s := b.spec
	if len(b.act.Fields) > 0 {
		b.act.Risk = pilotage.DeviceTypeRisk(s.Typ)
		b.act.Desc = fmt.Sprintf("Set settable properties of %s (%s); publishes a JSON object to %s.", d.FriendlyName, s.Desc, n.setTopic)
		b.act.Presets = anyPresets(b.act.Fields)
		b.act.Send = command(n.setTopic)
		b.act.WritesTo(n.setTopic)
		s.Actions = append(s.Actions, b.act)
	}
	if len(b.get.Fields) > 0 {
		b.get.Desc = `Ask Zigbee2MQTT to read current values from the device: publishes {"<property>": ""} to its /get topic; ` +
			"the values arrive as state changes."
		b.get.Send = command(n.getTopic)
		b.get.WritesTo(n.getTopic)
		s.Actions = append(s.Actions, b.get)
	}
	if len(b.gaps) == 0 {
		return
	}
	s.Fidelity = model.FidelityPartial
	s.Tags = append(s.Tags, model.TagPartial)
	s.Desc += " Not fully modelled: " + strings.Join(b.gaps, "; ") + "."
	log.Warn("zigbee2mqtt device not fully modelled", "friendly_name", d.FriendlyName, "model", d.Definition.Model, "missing", b.gaps)
}

func anyPresets(fields map[string]*model.Field) bool {
	for _, f := range fields {
		if f.HasPresets() {
			return true
		}
	}
	return false
}
