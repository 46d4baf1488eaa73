package devices

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
)

type haGroup struct {
	key  string
	ents []*haEntity
}

// devKey groups entities into devices: by first identifier, else first
// connection, else the entity stands alone.
func (e *haEntity) devKey() string {
	if e.dev != nil {
		switch ids := e.dev["identifiers"].(type) {
		case string:
			if ids != "" {
				return "ids:" + ids
			}
		case []any:
			if len(ids) > 0 {
				return "ids:" + stringify(ids[0])
			}
		}
		if cns, ok := e.dev["connections"].([]any); ok && len(cns) > 0 {
			if pair, ok := cns[0].([]any); ok && len(pair) == 2 {
				return "cns:" + stringify(pair[0]) + "=" + stringify(pair[1])
			}
		}
	}
	return "ent:" + e.key
}

// build makes the devices' specs. Each device claims its id from ids under
// its stable key (first come, first served: see idTable); a device that
// Zigbee2MQTT also lists natively (natives) is left to the native one.
func (h *haSource) build(log *slog.Logger, ids *idTable, natives []*devSpec) []*devSpec {
	slotKeys := ids.slotKeys(h.entities)
	groups, order := h.groups(log, ids)
	nativeIDs := make(map[string]bool, len(natives))
	for _, s := range natives {
		nativeIDs[s.id] = true
	}
	cache := make(map[string]*devSpec, len(order))
	var out []*devSpec
	for _, dk := range order {
		g := groups[dk]
		name := g.deviceName()
		base := firstNonEmpty(slug(name), slug(strings.SplitN(dk, ":", 2)[1]))
		key := g.regKey()
		if ids.claimed(key) || (nativeIDs[base] && g.fromZigbee2MQTT()) {
			ids.keep(key)
			continue // Zigbee2MQTT's own discovery of a device it lists natively
		}
		id, ok := ids.claim(key, base)
		if !ok {
			log.Warn("discovery device skipped: no usable name", "device", name)
			continue
		}
		for _, e := range g.ents {
			ids.keep(slotKeys[e])
		}
		fp := g.fingerprint(id, name)
		spec := h.cache[fp]
		if spec == nil {
			spec = buildHADevice(id, name, g, slots{ids, id, slotKeys})
		}
		cache[fp] = spec
		out = append(out, spec)
	}
	h.cache = cache
	return out
}

// groups sorts the accepted entities into devices, in claim order. Of the
// configs sharing a unique_id, the one whose topic holds it in ids keeps
// it, else the first to arrive (see uidOwners).
func (h *haSource) groups(log *slog.Logger, ids *idTable) (map[string]*haGroup, []string) {
	groups := map[string]*haGroup{}
	var order []string
	seenUID := map[string]string{}
	owners := h.uidOwners(ids)
	for _, k := range sortedKeys(h.entities) {
		e := h.entities[k]
		if uid := e.str("unique_id", ""); uid != "" {
			if owner := owners[e.component+"/"+uid]; owner != k {
				log.Debug("duplicate unique_id ignored", "topic", k, "kept", owner)
				continue
			}
		}
		if e.component == "device_automation" {
			k := "da/" + e.str("topic", "") + "/" + e.str("type", "") + "/" + e.str("subtype", "") + "/" + e.str("payload", "")
			if _, dup := seenUID[k]; dup {
				continue
			}
			seenUID[k] = e.key
		}
		dk := e.devKey()
		g := groups[dk]
		if g == nil {
			g = &haGroup{key: dk}
			groups[dk] = g
			order = append(order, dk)
		}
		g.ents = append(g.ents, e)
	}
	sort.Slice(order, func(i, j int) bool {
		ri, rj := keyRank(order[i]), keyRank(order[j])
		if ri != rj {
			return ri < rj
		}
		return order[i] < order[j]
	})
	return groups, order
}

// uidOwners picks, for each "<component>/<unique_id>", the topic of the
// config that keeps it: the one its entity's segment is pinned to in ids,
// else the earliest to arrive (as Home Assistant ignores a later config
// with a unique_id it has), never the one whose topic sorts first.
func (h *haSource) uidOwners(ids *idTable) map[string]string {
	owners := map[string]string{}
	for k, e := range h.entities {
		uk, ok := uidSlotKey(e)
		if !ok {
			continue
		}
		u := strings.TrimPrefix(uk.s, "ent:uid:")
		cur, seen := owners[u]
		pinned := ids.slotOwner(uk)
		if !seen || k == pinned || cur != pinned && e.ver < h.entities[cur].ver {
			owners[u] = k
		}
	}
	return owners
}

// regKey is the group's key in the id registry (IDAssignment.Key).
// Zigbee2MQTT's discovery names a device "zigbee2mqtt_<ieee>": it shares
// the native device's key, so either keeps the same id.
func (g *haGroup) regKey() idKey {
	switch {
	case strings.HasPrefix(g.key, "ids:"):
		if ieee, ok := strings.CutPrefix(g.key, "ids:zigbee2mqtt_"); ok && strings.HasPrefix(ieee, "0x") {
			return idKey{z2m: true, s: ieee}
		}
		return idKey{s: g.key}
	case strings.HasPrefix(g.key, "cns:"):
		return idKey{s: g.key}
	}
	e := g.ents[0]
	if uid := e.str("unique_id", ""); uid != "" {
		return idKey{s: "uid:" + e.component + "/" + uid}
	}
	return idKey{s: "topic:" + e.key}
}

func (g *haGroup) fingerprint(id, name string) string {
	var b strings.Builder
	b.WriteString(id + "\x00" + name)
	for _, e := range g.ents {
		fmt.Fprintf(&b, "\x00%s=%d", e.key, e.ver)
	}
	return b.String()
}

// keyRank sorts devices with identifiers before connection-only devices
// before lone entities, so that real devices win id collisions among the
// devices first seen in one rebuild.
func keyRank(k string) int {
	switch {
	case strings.HasPrefix(k, "ids:"):
		return 0
	case strings.HasPrefix(k, "cns:"):
		return 1
	}
	return 2
}

func (g *haGroup) fromZigbee2MQTT() bool {
	for _, e := range g.ents {
		if strings.EqualFold(e.origin, "Zigbee2MQTT") {
			return true
		}
	}
	return false
}

func (g *haGroup) devField(k string) string {
	for _, e := range g.ents {
		if e.dev != nil {
			if v, ok := e.dev[k]; ok && v != nil && stringify(v) != "" {
				return stringify(v)
			}
		}
	}
	return ""
}

func (g *haGroup) deviceName() string {
	if n := g.devField("name"); n != "" {
		return n
	}
	for _, e := range g.ents {
		if n, _, _ := e.name(); n != "" {
			return n
		}
	}
	return g.ents[0].objectID
}

var haTypePriority = []string{"lock", "alarm_control_panel", "valve", "siren", "cover", "climate", "light", "fan", "switch", "event", "device_automation", "binary_sensor", "sensor"}

func buildHADevice(id, name string, g *haGroup, pins slots) *devSpec {
	s := &devSpec{id: id, name: name, source: "homeassistant",
		manufacturer: g.devField("manufacturer"), modelName: g.devField("model"), area: g.devField("suggested_area")}
	comps := map[string]bool{}
	for _, e := range g.ents {
		comps[e.component] = true
	}
	for _, t := range haTypePriority {
		if comps[t] {
			s.typ = map[string]string{"alarm_control_panel": "alarm_panel", "event": "remote", "device_automation": "remote"}[t]
			if s.typ == "" {
				s.typ = t
			}
			break
		}
	}
	desc := strings.TrimSpace(s.manufacturer + " " + s.modelName)
	if o := g.ents[0].origin; o != "" {
		desc = strings.TrimSpace(desc + " (discovered via " + o + ")")
	}
	if desc == "" {
		desc = "Device from Home Assistant MQTT discovery"
	}
	s.desc = desc
	b := &haBuilder{spec: s, usedKeys: map[string]bool{}, availSeen: map[string]bool{}, lone: len(g.ents) == 1, pins: pins}
	ents := append([]*haEntity(nil), g.ents...)
	// Controllable components claim the primary slot first; plain sensors
	// claim device-class names before binary sensors (battery vs battery_low).
	rank := map[string]int{}
	for i, t := range haTypePriority {
		rank[t] = i
	}
	rank["sensor"] = rank["binary_sensor"] - 1
	sort.SliceStable(ents, func(i, j int) bool {
		ri, oki := rank[ents[i].component]
		rj, okj := rank[ents[j].component]
		if !oki {
			ri = len(rank)
		}
		if !okj {
			rj = len(rank)
		}
		return ri < rj
	})
	for _, e := range ents {
		b.entity(e, name)
	}
	return s
}

// haBuilder adds one device's entities to its spec.
type haBuilder struct {
	spec      *devSpec
	usedKeys  map[string]bool
	availSeen map[string]bool
	lone      bool  // the device has a single entity
	pins      slots // the segments the device's entities hold (first come)
}

// entityKey derives the entity's id segment: its name without the device
// name, else device class, else object id; "" marks the device's primary
// entity (name null or equal to the device name).
func (b *haBuilder) entityKey(e *haEntity, devName string) string {
	n, isNull, present := e.name()
	key := ""
	switch {
	case isNull && !b.lone && (e.component == "sensor" || e.component == "binary_sensor") && e.has("device_class"):
		key = slug(e.objectID)
	case isNull:
	case present:
		if len(n) >= len(devName) && strings.EqualFold(n[:len(devName)], devName) {
			n = n[len(devName):]
		}
		key = slug(n)
	default:
		key = slug(e.str("device_class", ""))
		if key == "" {
			key = slug(e.objectID)
		}
	}
	if e.component == "device_automation" {
		key = slug(e.str("type", "") + "_" + e.str("subtype", ""))
	}
	ek := b.pins.key(e)
	if seg, ok := b.pins.pinned(ek); ok && !b.usedKeys[seg] {
		key = seg // its segment since it first came
	}
	for _, cand := range []string{key, slug(e.objectID), slug(e.str("device_class", "")), slug(e.component), slug(e.component + "_" + e.objectID)} {
		if !b.usedKeys[cand] && b.pins.free(cand, ek) {
			b.usedKeys[cand] = true
			b.pins.pin(ek, cand, e.key)
			return cand
		}
	}
	seg := slug(e.component + "_" + e.key)
	b.pins.pin(ek, seg, e.key)
	return seg
}

// ent is the per-entity naming context.
type ent struct {
	*haEntity
	b    *haBuilder
	key  string
	name string
}

func (x *ent) mainID() string {
	if x.key == "" {
		return x.b.spec.id + ".state"
	}
	return x.b.spec.id + "." + x.key
}

func (x *ent) subID(sub string) string {
	if x.key == "" {
		return x.b.spec.id + "." + sub
	}
	return x.b.spec.id + "." + x.key + "_" + sub
}

func (x *ent) actionID(verb string) string {
	if x.key == "" {
		return x.b.spec.id + "." + verb
	}
	return x.b.spec.id + "." + x.key + "." + verb
}

func (b *haBuilder) entity(e *haEntity, devName string) {
	x := &ent{haEntity: e, b: b, key: b.entityKey(e, devName)}
	x.name, _, _ = e.name()
	if x.name == "" {
		x.name = devName
		if x.key != "" {
			x.name += " " + strings.ReplaceAll(x.key, "_", " ")
		}
	} else if !strings.HasPrefix(strings.ToLower(x.name), strings.ToLower(devName)) {
		x.name = devName + " " + x.name
	}
	b.availability(e)
	switch e.component {
	case "sensor":
		x.sensor()
	case "binary_sensor":
		x.binarySensor()
	case "switch", "siren":
		x.switchLike()
	case "light":
		x.light()
	case "lock":
		x.lock()
	case "cover", "valve":
		x.cover()
	case "climate":
		x.climate()
	case "button":
		x.button()
	case "number", "select", "text":
		x.valueEntity()
	case "fan":
		x.fan()
	case "alarm_control_panel":
		x.alarmPanel()
	case "event":
		x.event()
	case "device_automation":
		x.trigger()
	}
}

// availability routes the entity's availability topics to its device.
func (b *haBuilder) availability(e *haEntity) {
	type item struct{ topic, on, off, tpl string }
	var items []item
	on, off := e.str("payload_available", "online"), e.str("payload_not_available", "offline")
	if t := e.str("availability_topic", ""); t != "" {
		items = append(items, item{t, on, off, e.str("availability_template", "")})
	}
	for _, it := range e.list("availability") {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		sub := &haEntity{cfg: m}
		if t := sub.str("topic", ""); t != "" {
			items = append(items, item{t, sub.str("payload_available", on), sub.str("payload_not_available", off), sub.str("value_template", "")})
		}
	}
	mode := e.str("availability_mode", "latest")
	dev := b.spec.id
	for _, it := range items {
		if b.availSeen[it.topic] {
			continue
		}
		b.availSeen[it.topic] = true
		it := it
		t := compileTemplate(it.tpl)
		b.spec.routes = append(b.spec.routes, topicRoute{it.topic, func(tx *txn, p []byte) {
			v, err := t.render(p)
			if err != nil {
				return
			}
			s := strings.TrimSpace(stringify(v))
			switch {
			case s == it.on || strings.EqualFold(s, it.on):
				tx.setAvail(dev, it.topic, true, mode)
			case s == it.off || strings.EqualFold(s, it.off):
				tx.setAvail(dev, it.topic, false, mode)
			}
		}})
	}
}

// addState declares a state and routes topic through tpl and conv into it.
func (x *ent) addState(id, name, desc string, schema map[string]any, topic, tplSrc string, conv func(any) (any, bool)) {
	if topic == "" {
		return
	}
	t := compileTemplate(tplSrc)
	st := stateSpec{id: id, name: name, desc: desc, schema: schema}
	if t != nil && t.unsupported != "" {
		st.unsupported = t.unsupported
	}
	x.b.spec.states = append(x.b.spec.states, st)
	if st.unsupported != "" {
		return
	}
	dev := x.b.spec.id
	prop := strings.TrimPrefix(id, dev+".")
	x.b.spec.routes = append(x.b.spec.routes, topicRoute{topic, func(tx *txn, p []byte) {
		v, err := t.render(p)
		if err != nil {
			tx.touch(dev)
			return
		}
		if conv != nil {
			var ok bool
			if v, ok = conv(v); !ok {
				tx.touch(dev)
				return
			}
		}
		tx.setState(dev, id, prop, v)
	}})
}

func (x *ent) newAction(verb, desc string, risk pilotage.Risk) *action {
	a := newAction(x.actionID(verb), x.name+" "+verb, desc, risk)
	x.b.spec.actions = append(x.b.spec.actions, a)
	return a
}

func (x *ent) unitDesc() string {
	parts := []string{}
	if dc := x.str("device_class", ""); dc != "" {
		parts = append(parts, "device class "+dc)
	}
	if ec := x.str("entity_category", ""); ec != "" {
		parts = append(parts, ec)
	}
	if len(parts) == 0 {
		return x.name
	}
	return x.name + " (" + strings.Join(parts, ", ") + ")"
}
