package z2m

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// Source holds the last good Zigbee2MQTT bridge/devices list: of each
// device what every rebuild needs and its JSON, decoded again only when its
// spec must be built (the decoded definitions are not kept).
type Source struct {
	base    string
	devices []Head
	raws    []json.RawMessage    // each device's JSON, the cache key with its id (never changed in place)
	cache   map[string]z2mCached // id -> spec built from raw
	in      *model.Interner      // the catalog's: shares state keys between devices
	// lastFire dedupes an action seen both in the JSON state and on the
	// plain <name>/action topic.
	lastFire map[string]firing
	Listed   bool             // a bridge/devices list was accepted: it is complete
	areas    []model.AreaRule // Options.Areas
	// The last good bridge/groups list (GroupsListed once one was
	// accepted), and the groups' specs built from it.
	groups       []Group
	groupsRaw    []byte
	GroupsListed bool
	gcache       map[int64]groupCached
	maxList      int                    // MaxListExposes, or a test's
	todo         []todo                 // the devices the last Build left to BuildMore
	built        map[string]*model.Spec // IEEE address -> spec of the last Build and BuildMore, for the groups
}

type firing struct {
	value     string
	viaAction bool // seen on <base>/<name>/action (else in the JSON state)
	at        time.Time
}

// Head is the part of a device every rebuild reads; its friendly name
// and IEEE address share one string.
type Head struct {
	ieee, friendlyName string
	skip               bool   // the coordinator, or disabled
	exposes            int    // its exposes and features
	over               string // why it is past a bound (bounds.go), or ""
	base               string // the id it asks for
}

func headOf(d *Device) Head {
	both := d.FriendlyName + d.IEEE
	n := len(d.FriendlyName)
	return Head{ieee: both[n:], friendlyName: both[:n], skip: d.Type == "Coordinator" || d.Disabled,
		base: model.FirstNonEmpty(model.Slug(d.FriendlyName), model.Slug(d.IEEE))}
}

type z2mCached struct {
	raw  json.RawMessage
	spec *model.Spec
}

type Device struct {
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
	Exposes     []Expose `json:"exposes"`
}

type Expose struct {
	Type        string         `json:"type"`
	Name        string         `json:"name"`
	Property    string         `json:"property"`
	Label       string         `json:"label"`
	Description string         `json:"description"`
	Access      int            `json:"access"`
	Unit        string         `json:"unit"`
	Endpoint    string         `json:"endpoint"`
	ValueOn     any            `json:"value_on"`
	ValueOff    any            `json:"value_off"`
	ValueToggle any            `json:"value_toggle"`
	ValueMin    *float64       `json:"value_min"`
	ValueMax    *float64       `json:"value_max"`
	ValueStep   *float64       `json:"value_step"`
	Values      []any          `json:"values"`
	Features    []Expose       `json:"features"`
	Presets     []model.Preset `json:"presets"`
	ItemType    *Expose        `json:"item_type"`
	LengthMin   *float64       `json:"length_min"`
	LengthMax   *float64       `json:"length_max"`
}

// NewSource is an empty source; maxList bounds a list's exposes and
// features (MaxListExposes).
func NewSource(base string, in *model.Interner, areas []model.AreaRule, maxList int) *Source {
	return &Source{base: base, lastFire: map[string]firing{}, in: in, areas: areas, maxList: maxList}
}

// MaxDevices bounds one bridge/devices list: many times the largest
// real networks (a few hundred devices on one coordinator) and above the
// whole converter library as one network (4,516 definitions: the catalog's
// own load measure), so that a list from whoever may publish on the
// bridge's topic cannot make the catalog model tens of thousands of
// devices.
const MaxDevices = 8192

// HandleDevices replaces the device list; a malformed payload, or one over
// MaxDevices (refused true), keeps the old. over counts the devices of
// the new list past a bound (bounds.go).
func (z *Source) HandleDevices(log *slog.Logger, payload []byte) (changed, refused bool, over int) {
	l, refused := ParseDevices(log, z.base, payload, z.maxList)
	if l == nil {
		return false, refused, 0
	}
	z.Install(l)
	return true, false, l.Over
}

// HandleEvent applies bridge/event: device_leave removes a device at once,
// a successful interview updates its definition.
func (z *Source) HandleEvent(log *slog.Logger, payload []byte) bool {
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
			if h.ieee == ev.Data.IEEE && h.over == "" { // a device past a bound waits for the next list
				var d Device
				if err := json.Unmarshal(z.raws[i], &d); err != nil {
					log.Warn("zigbee2mqtt device unreadable", "topic", z.base+"/bridge/event", "err", err)
					return false
				}
				d.Definition = ev.Data.Definition
				d.Supported = ev.Data.Supported
				d.InterviewState = "SUCCESSFUL"
				b, _ := json.Marshal(&d)
				z.raws[i] = b
				return true
			}
		}
	}
	return false
}

// Build makes the devices' specs; each device's id is claimed from ids
// under its IEEE address (first come, first served: see model.IDTable).
// Past until (zero: never), it builds no device anew (it builds one at
// least): such a device keeps its previous spec, or waits without one,
// and more says that a later Build has work left.
func (z *Source) Build(log *slog.Logger, ids *model.IDTable, until time.Time) (out []*model.Spec, more bool) {
	cache := make(map[string]z2mCached, len(z.devices))
	built := 0
	z.todo = nil
	z.built = make(map[string]*model.Spec, len(z.devices))
	for i := range z.devices {
		h := &z.devices[i]
		key := z2mKey(h)
		if h.skip {
			ids.Keep(key)
			continue
		}
		id, ok := ids.Claim(key, h.base)
		if !ok {
			log.Warn("zigbee2mqtt device skipped: no usable name, or its ieee_address is listed twice", "friendly_name", h.friendlyName, "ieee_address", h.ieee)
			continue
		}
		ent, ok := z.cache[id]
		if !ok || !bytes.Equal(ent.raw, z.raws[i]) {
			if built > 0 && !until.IsZero() && (more || time.Now().After(until)) {
				more = true // built anew by a later Build, or BuildMore
				z.todo = append(z.todo, todo{i, id, key})
				if !ok {
					continue
				}
			} else if ent, ok = z.buildOne(log, id, i); !ok {
				continue
			} else {
				built++
			}
		}
		cache[ent.spec.ID] = ent // the spec's copy of the id, not this rebuild's
		ids.Share(key, ent.spec.ID)
		out = append(out, ent.spec)
		z.built[h.ieee] = ent.spec
	}
	z.cache = cache
	return z.withGroups(log, ids, out, more), more
}

// buildOne builds the spec of device i, whose id is id.
func (z *Source) buildOne(log *slog.Logger, id string, i int) (z2mCached, bool) {
	h := &z.devices[i]
	ent := z2mCached{raw: z.raws[i]}
	if h.over != "" {
		ent.spec = z.buildOver(id, h)
	} else {
		var d Device
		if err := json.Unmarshal(z.raws[i], &d); err != nil {
			log.Warn("zigbee2mqtt device unreadable", "friendly_name", h.friendlyName, "err", err)
			return ent, false
		}
		d.FriendlyName, d.IEEE = h.friendlyName, h.ieee // one copy of the name and address
		ent.spec = z.buildDevice(log, id, &d)
	}
	model.SetArea(z.areas, ent.spec)
	ent.spec.BuildEntries(z.in) // now: the build state it then drops would pile up over the list
	return ent, true
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

// z2mNames are a device's own strings (topics, ids, names), substrings of
// one allocation.
type z2mNames struct {
	topic, avail, setTopic, getTopic string
	setID, setName, getID, getName   string
	sids                             map[string]string // state key -> id
}

func z2mDeviceNames(s *model.Spec, id string, d *Device, base string) z2mNames {
	var n z2mNames
	var sl model.TextSlab
	sl.Add(&n.topic, base, "/", d.FriendlyName)
	sl.Add(&n.avail, base, "/", d.FriendlyName, "/availability")
	sl.Add(&n.setTopic, base, "/", d.FriendlyName, "/set")
	sl.Add(&n.getTopic, base, "/", d.FriendlyName, "/get")
	sl.Add(&n.setID, id, ".set")
	sl.Add(&n.setName, d.FriendlyName, " set")
	sl.Add(&n.getID, id, ".get")
	sl.Add(&n.getName, d.FriendlyName, " get")
	sl.Add(&s.DeviceTag, "device:", id)
	var ks []string
	if d.Definition != nil {
		keys := map[string]bool{}
		for _, e := range d.Definition.Exposes {
			routedKeys(e, keys)
		}
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
	}
	sids := make([]string, len(ks))
	for i, k := range ks {
		sl.Add(&sids[i], id, ".", model.Slug(k))
	}
	sl.Done()
	n.sids = make(map[string]string, len(ks))
	for i, k := range ks {
		n.sids[k] = sids[i]
	}
	s.ID = s.DeviceTag[len("device:"):] // the slab's copy
	return n
}

func (z *Source) buildDevice(log *slog.Logger, id string, d *Device) *model.Spec {
	s := &model.Spec{ID: id, Name: d.FriendlyName, Source: "zigbee2mqtt", Area: d.Area}
	n := z2mDeviceNames(s, id, d, z.base)
	s.Z2MTopic, s.Z2MAddr = n.topic, d.IEEE
	z.routeAvailability(s, n.avail)
	if d.Definition == nil {
		s.Desc = "Zigbee device not yet interviewed or not supported by Zigbee2MQTT; no states are known."
		s.Tags = append(s.Tags, "supported:false", model.TagUnmodelled)
		s.Manufacturer = d.Manufacturer
		s.ModelName = d.ModelID
		s.Fidelity = model.FidelityNone
		log.Info("zigbee2mqtt device not modelled: no definition (not supported, or not interviewed yet)",
			"friendly_name", d.FriendlyName, "model_id", d.ModelID)
		return s
	}
	def := d.Definition
	s.Manufacturer, s.ModelName = def.Vendor, def.Model
	s.Desc = strings.TrimSpace(def.Description + " (" + strings.TrimSpace(def.Vendor+" "+def.Model) + ")")
	if d.Description != "" {
		s.Desc = d.Description + " — " + s.Desc
	}
	b := newZ2MBuilder(z.in, s, n)
	for _, e := range def.Exposes {
		b.walk(e)
	}
	s.Typ = b.deviceType(def)
	b.finish(log, d, n)
	s.Routes = append(s.Routes, model.TopicRoute{Topic: n.topic, Fn: z.stateRoute(s.ID, sortedProps(b.props))})
	if b.hasAction {
		s.Routes = append(s.Routes, model.TopicRoute{Topic: n.topic + "/action", Fn: z.actionRoute(s.ID, b.sid("action"))})
	}
	return s
}

// z2mKey is a Zigbee2MQTT device's key: its IEEE address, or its name for
// the odd device listed without one.
func z2mKey(h *Head) model.IDKey {
	if h.ieee == "" {
		return model.IDKey{Z2M: true, S: "name=" + h.friendlyName}
	}
	return model.IDKey{Z2M: true, S: h.ieee}
}
