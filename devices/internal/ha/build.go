package ha

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
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
				return "ids:" + model.Stringify(ids[0])
			}
		}
		if cns, ok := e.dev["connections"].([]any); ok && len(cns) > 0 {
			if pair, ok := cns[0].([]any); ok && len(pair) == 2 {
				return "cns:" + model.Stringify(pair[0]) + "=" + model.Stringify(pair[1])
			}
		}
	}
	return "ent:" + e.key
}

// regKey is the group's key in the id registry (IDAssignment.Key).
// Zigbee2MQTT's discovery names a device "zigbee2mqtt_<ieee>": it shares
// the native device's key, so either keeps the same id.
func (g *haGroup) regKey() model.IDKey {
	switch {
	case strings.HasPrefix(g.key, "ids:"):
		if ieee, ok := strings.CutPrefix(g.key, "ids:zigbee2mqtt_"); ok && strings.HasPrefix(ieee, "0x") {
			return model.IDKey{Z2M: true, S: ieee}
		}
		if k, ok := z2mGroupKey(g.key); ok {
			return k
		}
		return model.IDKey{S: g.key}
	case strings.HasPrefix(g.key, "cns:"):
		return model.IDKey{S: g.key}
	}
	e := g.ents[0]
	if uid := e.str("unique_id", ""); uid != "" {
		return model.IDKey{S: "uid:" + e.component + "/" + uid}
	}
	return model.IDKey{S: "topic:" + e.key}
}

// z2mGroupKey is the key of the Zigbee2MQTT group that Zigbee2MQTT's
// discovery names "zigbee2mqtt_<its base topic's character codes>_<group
// id>": it shares the native group's key, so either keeps the same id.
func z2mGroupKey(key string) (model.IDKey, bool) {
	rest, ok := strings.CutPrefix(key, "ids:zigbee2mqtt_")
	base, num, two := strings.Cut(rest, "_")
	if !ok || !two || !allDigits(base) || !allDigits(num) || len(num) > 5 {
		return model.IDKey{}, false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	return model.GroupKey(n), err == nil
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

// fingerprint is what the device's spec is built from: its id and name,
// its entities' config versions and the keys their segments are pinned
// under (keys, from slotKeys).
func (g *haGroup) fingerprint(id, name string, keys map[*haEntity]model.IDKey) string {
	var b strings.Builder
	b.WriteString(id + "\x00" + name)
	for _, e := range g.ents {
		fmt.Fprintf(&b, "\x00%s=%d@%s", e.key, e.ver, keys[e].S)
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

// The device's own config is the first seen of its entities' (the
// holder): its device block names the device, and says its manufacturer,
// model and suggested area, before any config that joined the device
// later with its identifiers (which could otherwise rename it, or move it
// to another area, by a topic that sorts first).

// firstSeen returns what get gives for the first-seen config that gives
// something ("" if none).
func (g *haGroup) firstSeen(get func(e *haEntity) string) string {
	best, at := "", uint64(0)
	for _, e := range g.ents {
		if best != "" && e.seen >= at {
			continue
		}
		if v := get(e); v != "" {
			best, at = v, e.seen
		}
	}
	return best
}

// holder is the first-seen config.
func (g *haGroup) holder() *haEntity {
	h := g.ents[0]
	for _, e := range g.ents[1:] {
		if e.seen < h.seen {
			h = e
		}
	}
	return h
}

func (g *haGroup) devField(k string) string {
	return g.firstSeen(func(e *haEntity) string {
		if v, ok := e.dev[k]; ok && v != nil {
			return model.Stringify(v)
		}
		return ""
	})
}

func (g *haGroup) deviceName() string {
	if n := g.devField("name"); n != "" {
		return n
	}
	if n := g.firstSeen(func(e *haEntity) string { n, _, _ := e.name(); return n }); n != "" {
		return n
	}
	return g.holder().objectID
}

// haBuilder adds one device's entities to its spec.
type haBuilder struct {
	spec      *model.Spec
	usedKeys  map[string]bool
	availSeen map[string]bool
	lone      bool     // the device has a single entity
	gaps      []string // what cannot be modelled
	pins      slots    // the segments the device's entities hold (first come)
}

// entityKey derives the entity's id segment: its name without the device
// name, else device class, else object id; "" marks the device's primary
// entity (name null or equal to the device name).
func (b *haBuilder) entityKey(e *haEntity, devName string) string {
	n, isNull, present := e.name()
	key := ""
	switch {
	case isNull && !b.lone && (e.component == "sensor" || e.component == "binary_sensor") && e.has("device_class"):
		key = model.Slug(e.objectID)
	case isNull:
	case present:
		if len(n) >= len(devName) && strings.EqualFold(n[:len(devName)], devName) {
			n = n[len(devName):]
		}
		key = model.Slug(n)
	default:
		key = model.Slug(e.str("device_class", ""))
		if key == "" {
			key = model.Slug(e.objectID)
		}
	}
	switch e.component {
	case "device_automation":
		key = model.Slug(e.str("type", "") + "_" + e.str("subtype", ""))
	case "update":
		if _, isNull, _ := e.name(); isNull {
			key = "update"
		}
	}
	ek := b.pins.key(e)
	if seg, ok := b.pins.pinned(ek); ok && !b.usedKeys[seg] {
		key = seg // its segment since it first came
	}
	for _, cand := range []string{key, model.Slug(e.objectID), model.Slug(e.str("device_class", "")), model.Slug(e.component), model.Slug(e.component + "_" + e.objectID)} {
		if !b.usedKeys[cand] && b.pins.free(cand, ek) {
			b.usedKeys[cand] = true
			b.pins.pin(ek, cand, e.key)
			return cand
		}
	}
	seg := model.Slug(e.component + "_" + e.key)
	b.pins.pin(ek, seg, e.key)
	return seg
}

// ent is the per-entity naming context.
type ent struct {
	*haEntity
	b    *haBuilder
	key  string
	name string
	read map[string]bool // the command topics and templates its model read (auditTemplates)
	// expire is a sensor's expire_after (0: none): addState makes its
	// state read offline that long after its last message.
	expire time.Duration
}

func (x *ent) mainID() string {
	if x.key == "" {
		return x.b.spec.ID + ".state"
	}
	return x.b.spec.ID + "." + x.key
}

func (x *ent) subID(sub string) string {
	if x.key == "" {
		return x.b.spec.ID + "." + sub
	}
	return x.b.spec.ID + "." + x.key + "_" + sub
}

func (x *ent) actionID(verb string) string {
	if x.key == "" {
		return x.b.spec.ID + "." + verb
	}
	return x.b.spec.ID + "." + x.key + "." + verb
}

func (b *haBuilder) entity(e *haEntity, devName string) {
	if e.unmodelled {
		n, _, _ := e.name()
		b.gap(model.FirstNonEmpty(n, e.objectID) + ": " + e.component + " entities are not modelled")
		return
	}
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
	b.availability(e, x.name)
	defer x.finishActions(len(b.spec.Actions))
	switch e.component {
	case "sensor":
		x.sensor()
	case "binary_sensor":
		x.binarySensor()
	case "switch":
		x.switchLike()
	case "siren":
		x.siren()
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
	case "update":
		x.update()
	case "scene":
		x.scene()
	case "vacuum":
		x.vacuum()
	}
}
