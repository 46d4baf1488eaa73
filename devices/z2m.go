package devices

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
)

// z2mSource holds the last good Zigbee2MQTT bridge/devices list: of each
// device what every rebuild needs and its JSON, decoded again only when its
// spec must be built (the decoded definitions are not kept).
type z2mSource struct {
	base    string
	devices []z2mHead
	raws    []string             // each device's JSON, the cache key with its id
	cache   map[string]z2mCached // id -> spec built from raw
	in      *interner            // the catalog's: shares state keys between devices
	// lastFire dedupes an action seen both in the JSON state and on the
	// plain <name>/action topic.
	lastFire map[string]firing
}

type firing struct {
	value     string
	viaAction bool // seen on <base>/<name>/action (else in the JSON state)
	at        time.Time
}

// z2mHead is the part of a device every rebuild reads; its friendly name
// and IEEE address share one string.
type z2mHead struct {
	ieee, friendlyName string
	skip               bool // the coordinator, or disabled
}

func headOf(d *z2mDevice) z2mHead {
	both := d.FriendlyName + d.IEEE
	n := len(d.FriendlyName)
	return z2mHead{ieee: both[n:], friendlyName: both[:n], skip: d.Type == "Coordinator" || d.Disabled}
}

type z2mCached struct {
	raw  string
	spec *devSpec
}

type z2mDevice struct {
	IEEE               string         `json:"ieee_address"`
	FriendlyName       string         `json:"friendly_name"`
	Type               string         `json:"type"`
	Supported          *bool          `json:"supported"`
	Disabled           bool           `json:"disabled"`
	InterviewCompleted *bool          `json:"interview_completed"`
	InterviewState     string         `json:"interview_state"`
	Definition         *z2mDefinition `json:"definition"`
	Manufacturer       string         `json:"manufacturer"`
	ModelID            string         `json:"model_id"`
	Description        string         `json:"description"`
	Area               string         `json:"area"`
}

type z2mDefinition struct {
	Model       string   `json:"model"`
	Vendor      string   `json:"vendor"`
	Description string   `json:"description"`
	Exposes     []expose `json:"exposes"`
}

type expose struct {
	Type        string   `json:"type"`
	Name        string   `json:"name"`
	Property    string   `json:"property"`
	Label       string   `json:"label"`
	Description string   `json:"description"`
	Access      int      `json:"access"`
	Unit        string   `json:"unit"`
	Endpoint    string   `json:"endpoint"`
	ValueOn     any      `json:"value_on"`
	ValueOff    any      `json:"value_off"`
	ValueToggle any      `json:"value_toggle"`
	ValueMin    *float64 `json:"value_min"`
	ValueMax    *float64 `json:"value_max"`
	ValueStep   *float64 `json:"value_step"`
	Values      []any    `json:"values"`
	Features    []expose `json:"features"`
	Presets     []preset `json:"presets"`
	ItemType    *expose  `json:"item_type"`
	LengthMin   *float64 `json:"length_min"`
	LengthMax   *float64 `json:"length_max"`
}

// preset is a named value of a numeric expose; the value may lie outside
// value_min..value_max (color_temp_startup "previous" = 65535) or be a
// string (on_level "previous").
type preset struct {
	Name        string `json:"name"`
	Value       any    `json:"value"`
	Description string `json:"description"`
}

// Access bits of a Zigbee2MQTT expose.
const (
	accessPublished = 1
	accessSet       = 2
)

func newZ2MSource(base string, in *interner) *z2mSource {
	return &z2mSource{base: base, lastFire: map[string]firing{}, in: in}
}

// handleDevices replaces the device list; a malformed payload keeps the old.
func (z *z2mSource) handleDevices(log *slog.Logger, payload []byte) bool {
	var raws []json.RawMessage
	if err := json.Unmarshal(payload, &raws); err != nil {
		log.Warn("malformed zigbee2mqtt bridge/devices skipped", "topic", z.base+"/bridge/devices", "err", err)
		return false
	}
	devs := make([]z2mHead, 0, len(raws))
	keys := make([]string, 0, len(raws))
	for _, r := range raws {
		var d z2mDevice
		if err := json.Unmarshal(r, &d); err != nil {
			log.Warn("malformed zigbee2mqtt bridge/devices skipped", "topic", z.base+"/bridge/devices", "err", err)
			return false
		}
		if d.IEEE == "" && d.FriendlyName == "" {
			log.Warn("zigbee2mqtt device without ieee_address and friendly_name skipped", "topic", z.base+"/bridge/devices")
			continue
		}
		devs = append(devs, headOf(&d))
		keys = append(keys, string(r))
	}
	z.devices, z.raws = devs, keys
	return true
}

// handleEvent applies bridge/event: device_leave removes a device at once,
// a successful interview updates its definition.
func (z *z2mSource) handleEvent(log *slog.Logger, payload []byte) bool {
	var ev struct {
		Type string `json:"type"`
		Data struct {
			IEEE         string         `json:"ieee_address"`
			FriendlyName string         `json:"friendly_name"`
			Status       string         `json:"status"`
			Supported    *bool          `json:"supported"`
			Definition   *z2mDefinition `json:"definition"`
		} `json:"data"`
	}
	if err := json.Unmarshal(payload, &ev); err != nil {
		log.Warn("malformed zigbee2mqtt bridge/event skipped", "topic", z.base+"/bridge/event", "err", err)
		return false
	}
	switch {
	case ev.Type == "device_leave":
		for i, d := range z.devices {
			if d.ieee == ev.Data.IEEE {
				z.devices = append(z.devices[:i:i], z.devices[i+1:]...)
				z.raws = append(z.raws[:i:i], z.raws[i+1:]...)
				return true
			}
		}
	case ev.Type == "device_interview" && ev.Data.Status == "successful" && ev.Data.Definition != nil:
		for i, h := range z.devices {
			if h.ieee == ev.Data.IEEE {
				var d z2mDevice
				if err := json.Unmarshal([]byte(z.raws[i]), &d); err != nil {
					log.Warn("zigbee2mqtt device unreadable", "topic", z.base+"/bridge/event", "err", err)
					return false
				}
				d.Definition = ev.Data.Definition
				d.Supported = ev.Data.Supported
				d.InterviewState = "SUCCESSFUL"
				b, _ := json.Marshal(&d)
				z.raws[i] = string(b)
				return true
			}
		}
	}
	return false
}

func (z *z2mSource) build(log *slog.Logger) []*devSpec {
	var out []*devSpec
	used := map[string]bool{}
	cache := make(map[string]z2mCached, len(z.devices))
	for i := range z.devices {
		h := &z.devices[i]
		if h.skip {
			continue
		}
		id := slug(h.friendlyName)
		if id == "" {
			id = slug(h.ieee)
		}
		if id == "" || used[id] {
			id = strings.Trim(id+"_"+slug(h.ieee), "_")
		}
		if id == "" || used[id] {
			log.Warn("zigbee2mqtt device id collision skipped", "friendly_name", h.friendlyName)
			continue
		}
		used[id] = true
		ent, ok := z.cache[id]
		if !ok || ent.raw != z.raws[i] {
			var d z2mDevice
			if err := json.Unmarshal([]byte(z.raws[i]), &d); err != nil {
				log.Warn("zigbee2mqtt device unreadable", "friendly_name", h.friendlyName, "err", err)
				continue
			}
			d.FriendlyName = h.friendlyName // one copy of the name
			ent = z2mCached{raw: z.raws[i], spec: z.buildDevice(id, &d)}
		}
		cache[ent.spec.id] = ent // the spec's copy of the id, not this rebuild's
		out = append(out, ent.spec)
	}
	z.cache = cache
	return out
}

// z2mProp routes one key of the device's JSON state.
type z2mProp struct {
	key    string
	id     string
	event  bool
	number bool
}

// sortedProps lists the routed keys in key order, for the state route.
func sortedProps(m map[string]z2mProp) []z2mProp {
	out := make([]z2mProp, 0, len(m))
	for k, p := range m {
		p.key = k
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

type z2mBuilder struct {
	in         *interner
	spec       *devSpec
	props      map[string]z2mProp
	stateIdx   map[string]int
	act        *action
	sids       map[string]string // key -> id
	typ        string
	hasAction  bool
	hasBinary  bool
	securityIn bool
}

func (z *z2mSource) buildDevice(id string, d *z2mDevice) *devSpec {
	s := &devSpec{id: id, name: d.FriendlyName, source: "zigbee2mqtt", area: d.Area}
	b := &z2mBuilder{in: z.in, spec: s, props: map[string]z2mProp{}, stateIdx: map[string]int{}, sids: map[string]string{}}
	// The device's own strings (topics, ids) are substrings of one string.
	var topic, availTopic, setTopic, actID, actName string
	var sl textSlab
	sl.add(&topic, z.base, "/", d.FriendlyName)
	sl.add(&availTopic, z.base, "/", d.FriendlyName, "/availability")
	sl.add(&setTopic, z.base, "/", d.FriendlyName, "/set")
	sl.add(&actID, id, ".set")
	sl.add(&actName, d.FriendlyName, " set")
	sl.add(&s.deviceTag, "device:", id)
	if d.Definition != nil {
		keys := map[string]bool{}
		for _, e := range d.Definition.Exposes {
			routedKeys(e, keys)
		}
		ks := make([]string, 0, len(keys))
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		sids := make([]string, len(ks))
		for i, k := range ks {
			sl.add(&sids[i], id, ".", slug(k))
		}
		sl.done()
		for i, k := range ks {
			b.sids[k] = sids[i]
		}
	} else {
		sl.done()
	}
	id = s.deviceTag[len("device:"):] // the slab's copy
	s.id = id
	b.act = newAction(actID, actName, "", pilotage.RiskControl)
	z.routeAvailability(s, availTopic)
	if d.Definition == nil {
		s.desc = "Zigbee device not yet interviewed or not supported by Zigbee2MQTT; no states are known."
		s.tags = append(s.tags, "supported:false")
		s.manufacturer = d.Manufacturer
		s.modelName = d.ModelID
		return s
	}
	def := d.Definition
	s.manufacturer, s.modelName = def.Vendor, def.Model
	s.desc = strings.TrimSpace(def.Description + " (" + strings.TrimSpace(def.Vendor+" "+def.Model) + ")")
	if d.Description != "" {
		s.desc = d.Description + " — " + s.desc
	}
	for _, e := range def.Exposes {
		b.walk(e)
	}
	s.typ = b.deviceType(def)
	if len(b.act.fields) > 0 {
		if isSecurityType(s.typ) {
			b.act.risk = pilotage.RiskSecurity
		}
		b.act.desc = fmt.Sprintf("Set settable properties of %s (%s); publishes a JSON object to %s/set.", d.FriendlyName, s.desc, topic)
		b.act.send = func(ctx context.Context, p sender, args map[string]any) error {
			return p.publishJSON(ctx, setTopic, args)
		}
		s.actions = append(s.actions, b.act)
	}
	s.routes = append(s.routes, topicRoute{topic, z.stateRoute(id, sortedProps(b.props))})
	if b.hasAction {
		s.routes = append(s.routes, topicRoute{topic + "/action", z.actionRoute(id, b.sid("action"))})
	}
	return s
}

// routedKeys collects the keys walk gives an id to.
func routedKeys(e expose, keys map[string]bool) {
	switch e.Type {
	case "composite", "binary", "numeric", "enum", "text", "list":
		if k := exposeKey(e); k != "" {
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
	return b.spec.id + "." + slug(key)
}

func isSecurityType(t string) bool {
	switch t {
	case "lock", "cover", "valve", "siren", "alarm_panel", "garage_door":
		return true
	}
	return false
}

func (b *z2mBuilder) deviceType(def *z2mDefinition) string {
	desc := strings.ToLower(def.Description)
	switch {
	case b.typ == "lock" || b.typ == "cover":
		return b.typ
	case strings.Contains(desc, "valve"):
		return "valve"
	case strings.Contains(desc, "siren") || b.securityIn:
		return "siren"
	case b.typ != "":
		return b.typ
	case b.hasAction && len(b.act.fields) <= 1:
		return "remote"
	case b.hasBinary:
		return "binary_sensor"
	}
	return "sensor"
}

var typePriority = map[string]int{"lock": 6, "cover": 5, "climate": 4, "light": 3, "switch": 2, "fan": 1}

func (b *z2mBuilder) walk(e expose) {
	switch e.Type {
	case "light", "switch", "lock", "cover", "climate", "fan":
		if typePriority[e.Type] > typePriority[b.typ] {
			b.typ = e.Type
		}
		for _, f := range e.Features {
			b.walk(f)
		}
	case "composite":
		b.composite(e)
	case "binary", "numeric", "enum", "text", "list":
		b.leaf(e)
	default:
		for _, f := range e.Features {
			b.walk(f)
		}
	}
	if e.Name == "warning" || e.Name == "alarm" && e.Access&accessSet != 0 {
		b.securityIn = true
	}
}

func exposeKey(e expose) string {
	if e.Property != "" {
		return e.Property
	}
	return e.Name
}

func exposeDesc(e expose) string {
	d := e.Description
	if d == "" {
		d = e.Label
	}
	if e.Endpoint != "" && !strings.Contains(d, e.Endpoint) {
		d = strings.TrimSpace(d + " (endpoint " + e.Endpoint + ")")
	}
	return d
}

func exposeName(e expose) string {
	n := e.Label
	if n == "" {
		n = e.Name
	}
	if e.Endpoint != "" {
		n += " " + e.Endpoint
	}
	return n
}

func (b *z2mBuilder) leaf(e expose) {
	key := b.in.str(exposeKey(e))
	if key == "" {
		return
	}
	sid := b.sid(key)
	if e.Access&accessPublished != 0 {
		if key == "action" && e.Type == "enum" && e.Access&accessSet == 0 {
			b.hasAction = true
			b.spec.events = append(b.spec.events, eventSpec{id: sid, name: exposeName(e), desc: exposeDesc(e), values: stringsOf(e.Values)})
			b.props[key] = z2mProp{id: sid, event: true}
		} else {
			b.addState(key, sid, exposeName(e), exposeDesc(e), stateSchema(e))
			b.props[key] = z2mProp{id: sid, number: e.Type == "numeric"}
			if e.Type == "binary" {
				b.hasBinary = true
			}
		}
	}
	if e.Access&accessSet != 0 {
		if _, dup := b.act.fields[key]; !dup {
			b.act.fields[key] = inputField(e)
			if e.Access&accessPublished != 0 && !b.props[key].event {
				b.act.affects[key] = sid
			}
		}
	}
}

func (b *z2mBuilder) addState(key, sid, name, desc string, schema map[string]any) {
	if i, ok := b.stateIdx[key]; ok {
		// Same property exposed twice (color as xy and as hs): merge objects.
		mergeObjectSchema(b.spec.states[i].schema, schema)
		return
	}
	b.stateIdx[key] = len(b.spec.states)
	b.spec.states = append(b.spec.states, stateSpec{id: sid, name: name, desc: desc, schema: schema})
}

func mergeObjectSchema(dst, src map[string]any) {
	dp, ok1 := dst["properties"].(map[string]any)
	sp, ok2 := src["properties"].(map[string]any)
	if !ok1 || !ok2 {
		return
	}
	for k, v := range sp {
		if _, ok := dp[k]; !ok {
			dp[k] = v
		}
	}
}

func (b *z2mBuilder) composite(e expose) {
	key := b.in.str(exposeKey(e))
	if key == "" {
		return
	}
	sid := b.sid(key)
	if e.Access&accessPublished != 0 {
		props := map[string]any{}
		for _, f := range e.Features {
			if k := exposeKey(f); k != "" && f.Access&accessPublished != 0 {
				props[k] = stateSchema(f)
			}
		}
		if len(props) > 0 {
			b.addState(key, sid, exposeName(e), exposeDesc(e), map[string]any{"type": "object", "properties": props})
			b.props[key] = z2mProp{id: sid}
		}
	}
	if e.Access&accessSet == 0 {
		return
	}
	sub := map[string]*field{}
	for _, f := range e.Features {
		if k := exposeKey(f); k != "" && f.Access&accessSet != 0 {
			sub[k] = inputField(f)
		}
	}
	if len(sub) == 0 {
		return
	}
	if old, ok := b.act.fields[key]; ok && old.kind == "object" {
		for k, f := range sub {
			if _, dup := old.props[k]; !dup {
				old.props[k] = f
			}
		}
		*old = *objField(exposeDesc(e), old.props)
		return
	}
	b.act.fields[key] = objField(exposeDesc(e), sub)
	if _, ok := b.stateIdx[key]; ok {
		b.act.affects[key] = sid
	}
}

func stateSchema(e expose) map[string]any {
	s := map[string]any{}
	switch e.Type {
	case "binary":
		_, onBool := e.ValueOn.(bool)
		_, offBool := e.ValueOff.(bool)
		if onBool && offBool {
			s["type"] = "boolean"
			if on, _ := e.ValueOn.(bool); !on {
				s["x-active-value"] = false
			}
		} else {
			vals := []any{e.ValueOn, e.ValueOff}
			s["enum"] = vals
			if allStrings(vals) {
				s["type"] = "string"
			}
		}
	case "numeric":
		s["type"] = "number"
		if e.ValueMin != nil {
			s["minimum"] = *e.ValueMin
		}
		if e.ValueMax != nil {
			s["maximum"] = *e.ValueMax
		}
		if e.Unit != "" {
			s["x-unit"] = e.Unit
		}
	case "enum":
		if len(e.Values) > 0 {
			s["enum"] = e.Values
		}
		if allStrings(e.Values) {
			s["type"] = "string"
		}
	case "text":
		s["type"] = "string"
	case "list":
		s["type"] = "array"
	case "composite":
		props := map[string]any{}
		for _, f := range e.Features {
			if k := exposeKey(f); k != "" {
				props[k] = stateSchema(f)
			}
		}
		s["type"] = "object"
		s["properties"] = props
	}
	if d := exposeDesc(e); d != "" {
		s["description"] = d
	}
	return s
}

func inputField(e expose) *field {
	desc := exposeDesc(e)
	switch e.Type {
	case "binary":
		vals := []any{e.ValueOn, e.ValueOff}
		if e.ValueToggle != nil {
			vals = append(vals, e.ValueToggle)
		}
		return enumField(desc, vals)
	case "numeric":
		step := 0.0
		if e.ValueStep != nil {
			step = *e.ValueStep
		}
		return numField(desc, e.ValueMin, e.ValueMax, step, e.Unit)
	case "enum":
		if len(e.Values) == 0 {
			return strField(desc)
		}
		return enumField(desc, e.Values)
	case "list":
		return &field{schema: map[string]any{"type": "array", "description": desc}, kind: "array"}
	case "composite":
		sub := map[string]*field{}
		for _, f := range e.Features {
			if k := exposeKey(f); k != "" {
				sub[k] = inputField(f)
			}
		}
		return objField(desc, sub)
	}
	return strField(desc)
}

func stringsOf(vs []any) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
