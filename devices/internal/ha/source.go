package ha

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// Source holds the accepted Home Assistant discovery configs.
type Source struct {
	prefix   string
	entities map[string]*haEntity // by discovery topic ("#cmp" suffix for device-based)
	devCmps  map[string][]string  // device discovery topic -> its entity keys
	nextVer  uint64
	Groups   map[string]*haGroupState // by device key (haEntity.devKey)
	dirty    map[string]bool          // devices to rebuild
	uids     map[string]*uidSlot      // by dedupKey
	in       *model.Interner          // the catalog's: specs build their entries at once
	ids      *model.IDTable           // the catalog's: who holds a unique_id (uidSlot)
	areas    []model.AreaRule         // Options.Areas
}

// haEntity is one discovered entity, abbreviations expanded and '~'
// substituted.
type haEntity struct {
	key       string
	component string
	objectID  string
	cfg       map[string]any
	dev       map[string]any // expanded device block, nil when absent
	origin    string
	ver       uint64 // identifies this config version (cache key)
	seen      uint64 // the ver its topic was first accepted with (kept by updates)
	// unmodelled: a component Home Assistant has and this package does
	// not model (camera, lawn_mower, …).
	unmodelled bool
}

func NewSource(prefix string, in *model.Interner, ids *model.IDTable, areas []model.AreaRule) *Source {
	return &Source{prefix: prefix, in: in, ids: ids, areas: areas, entities: map[string]*haEntity{}, devCmps: map[string][]string{},
		Groups: map[string]*haGroupState{}, dirty: map[string]bool{}, uids: map[string]*uidSlot{}}
}

var haIDRe = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// haComponents lists the components this package models.
var haComponents = map[string]bool{
	"binary_sensor": true, "sensor": true, "switch": true, "light": true, "lock": true, "cover": true,
	"climate": true, "button": true, "event": true, "number": true, "select": true, "text": true,
	"fan": true, "siren": true, "valve": true, "alarm_control_panel": true, "device_automation": true,
	"update": true, "scene": true, "vacuum": true,
}

// haSupported are the components Home Assistant's MQTT integration knows
// (SUPPORTED_COMPONENTS). Of those this package does not model, an entity
// still joins its device, which says what it lacks; any other component
// is refused, as Home Assistant refuses it.
var haSupported = map[string]bool{
	"alarm_control_panel": true, "binary_sensor": true, "button": true, "camera": true, "climate": true,
	"cover": true, "date": true, "datetime": true, "device_automation": true, "device_tracker": true,
	"event": true, "fan": true, "humidifier": true, "image": true, "lawn_mower": true, "light": true,
	"lock": true, "notify": true, "number": true, "scene": true, "select": true, "sensor": true,
	"siren": true, "switch": true, "tag": true, "text": true, "time": true, "update": true,
	"vacuum": true, "valve": true, "water_heater": true,
}

// haDeviceKeys are the keys allowed at the root of device-based discovery
// (DEVICE_DISCOVERY_SCHEMA); haShared are those its components inherit
// unless they set them (SHARED_OPTIONS), besides device and origin.
var (
	haDeviceKeys = map[string]bool{"device": true, "components": true, "origin": true, "state_topic": true,
		"command_topic": true, "qos": true, "encoding": true, "availability": true, "availability_mode": true,
		"availability_template": true, "availability_topic": true, "payload_available": true, "payload_not_available": true}
	haShared = []string{"availability", "availability_mode", "availability_template", "availability_topic",
		"command_topic", "payload_available", "payload_not_available", "state_topic"}
)

// HandleConfig applies one discovery message on
// <prefix>/<component>/[<node_id>/]<object_id>/config; it reports whether
// the set of accepted configs changed. What is refused is logged.
func (h *Source) HandleConfig(log *slog.Logger, topic string, payload []byte) bool {
	rest := strings.TrimSuffix(strings.TrimPrefix(topic, h.prefix+"/"), "/config")
	parts := strings.Split(rest, "/")
	if len(parts) < 2 || len(parts) > 3 || !haWord(parts[0]) {
		log.Warn("illegal discovery topic skipped", "topic", topic)
		return false
	}
	for _, p := range parts[1:] {
		if !haIDRe.MatchString(p) {
			log.Warn("illegal discovery topic skipped: node and object ids are [a-zA-Z0-9_-]", "topic", topic)
			return false
		}
	}
	if parts[0] == "device" {
		return h.handleDevice(log, topic, payload)
	}
	if !haSupported[parts[0]] {
		log.Warn("discovery component not supported by Home Assistant, skipped", "topic", topic, "component", parts[0])
		return false
	}
	if len(payload) == 0 {
		return h.drop(log, topic)
	}
	raw, err := decodeObject(payload)
	if err != nil {
		log.Warn("malformed discovery payload skipped", "topic", topic, "err", err)
		return false
	}
	if migrating(raw) {
		return h.drop(log, topic) // the device-based config takes over
	}
	ent, err := newHAEntity(topic, parts[0], parts[len(parts)-1], expandConfig(raw))
	if err != nil {
		log.Warn("invalid discovery config skipped", "topic", topic, "err", err)
		return false
	}
	h.put(log, ent)
	return true
}

// haWord is Python's \w+ (the component in a discovery topic).
func haWord(s string) bool {
	for _, r := range s {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return s != ""
}

// migrating reports a discovery migration request ({"migrate_discovery":
// true}, or its abbreviation): the config is dropped for the other form.
func migrating(raw map[string]any) bool {
	for _, k := range []string{"migrate_discovery", "migr_discvry"} {
		if v, ok := raw[k]; ok && len(raw) == 1 {
			return v == true
		}
	}
	return false
}

func decodeObject(p []byte) (map[string]any, error) {
	var raw map[string]any
	if err := json.Unmarshal(p, &raw); err != nil {
		return nil, err
	}
	if raw == nil {
		return nil, errors.New("payload is not a JSON object")
	}
	return raw, nil
}

// handleDevice applies device-based discovery: the payload is checked as
// Home Assistant checks it (device with an identifier or connection,
// origin with a name, components each with a known platform, no other
// root keys), then each component is validated on its own and the valid
// ones replace every component of that device topic. An empty payload or
// a migration request removes them all.
func (h *Source) handleDevice(log *slog.Logger, topic string, payload []byte) bool {
	if len(payload) == 0 {
		return h.replaceDevice(log, topic, nil)
	}
	raw, err := decodeObject(payload)
	if err != nil {
		log.Warn("malformed device discovery payload skipped", "topic", topic, "err", err)
		return false
	}
	if migrating(raw) {
		return h.replaceDevice(log, topic, nil)
	}
	cfg := expandConfig(raw)
	if err := checkDeviceConfig(cfg); err != nil {
		log.Warn("invalid device discovery config skipped", "topic", topic, "err", err)
		return false
	}
	return h.replaceDevice(log, topic, h.deviceEntities(log, topic, cfg))
}

func checkDeviceConfig(cfg map[string]any) error {
	for _, k := range sortedKeys(cfg) {
		if !haDeviceKeys[k] {
			return fmt.Errorf("extra key not allowed in device discovery: %s", k)
		}
	}
	dev, ok := cfg["device"].(map[string]any)
	if !ok {
		return errors.New("device (dev) must be a mapping")
	}
	if !hasIdentity(dev) {
		return errors.New("device must have at least one identifying value in identifiers and/or connections")
	}
	if o, ok := cfg["origin"].(map[string]any); !ok || o["name"] == nil || o["name"] == "" {
		return errors.New("origin (o) with a name is required")
	}
	cmps, ok := cfg["components"].(map[string]any)
	if !ok {
		return errors.New("components (cmps) must be a mapping")
	}
	for _, id := range sortedKeys(cmps) {
		c, ok := cmps[id].(map[string]any)
		if !ok {
			return fmt.Errorf("component %s is not a mapping", id)
		}
		p, _ := c["platform"].(string)
		if p == "" {
			p, _ = c["p"].(string)
		}
		if !haSupported[p] {
			return fmt.Errorf("component %s: platform (p) %q is not one Home Assistant supports", id, p)
		}
	}
	return nil
}

func hasIdentity(dev map[string]any) bool {
	for _, k := range []string{"identifiers", "connections"} {
		switch v := dev[k].(type) {
		case string:
			if v != "" {
				return true
			}
		case []any:
			if len(v) > 0 {
				return true
			}
		}
	}
	return false
}

// deviceEntities builds the components of a checked device config: each
// inherits device, origin and the shared options it does not set; one
// whose own config is invalid is logged and left out.
func (h *Source) deviceEntities(log *slog.Logger, topic string, cfg map[string]any) []*haEntity {
	cmps := cfg["components"].(map[string]any)
	var out []*haEntity
	for _, id := range sortedKeys(cmps) {
		c := expandKeys(cmps[id].(map[string]any), haAbbreviations)
		platform, _ := c["platform"].(string)
		delete(c, "platform")
		if len(c) == 0 {
			continue // {"p": "sensor"} alone removes the component
		}
		merged := map[string]any{"device": cfg["device"], "origin": cfg["origin"]}
		for _, k := range haShared {
			if v, ok := cfg[k]; ok {
				merged[k] = v
			}
		}
		for k, v := range c {
			merged[k] = expandValue(k, v)
		}
		ent, err := newHAEntity(topic+"#"+id, platform, id, merged)
		if err != nil {
			log.Warn("invalid device discovery component skipped", "topic", topic, "component", id, "err", err)
			continue
		}
		out = append(out, ent)
	}
	return out
}

func (h *Source) replaceDevice(log *slog.Logger, topic string, ents []*haEntity) bool {
	old := h.devCmps[topic]
	changed := len(old) != len(ents)
	keep := make(map[string]bool, len(ents))
	for _, e := range ents {
		keep[e.key] = true
	}
	for _, k := range old {
		if !keep[k] {
			h.drop(log, k)
		}
	}
	keys := make([]string, 0, len(ents))
	for _, e := range ents {
		h.put(log, e)
		keys = append(keys, e.key)
	}
	if len(keys) == 0 {
		delete(h.devCmps, topic)
	} else {
		h.devCmps[topic] = keys
	}
	return changed || len(ents) > 0
}

// expandConfig expands abbreviations at the root, in device/origin blocks,
// in availability items and in components.
func expandConfig(raw map[string]any) map[string]any {
	cfg := expandKeys(raw, haAbbreviations)
	for k, v := range cfg {
		cfg[k] = expandValue(k, v)
	}
	return cfg
}

func expandValue(k string, v any) any {
	switch k {
	case "device":
		if m, ok := v.(map[string]any); ok {
			return expandKeys(m, haDeviceAbbreviations)
		}
	case "origin":
		if m, ok := v.(map[string]any); ok {
			return expandKeys(m, haOriginAbbreviations)
		}
	case "availability":
		switch a := v.(type) {
		case []any:
			out := make([]any, len(a))
			for i, it := range a {
				if m, ok := it.(map[string]any); ok {
					out[i] = expandKeys(m, haAbbreviations)
				} else {
					out[i] = it
				}
			}
			return out
		case map[string]any:
			return []any{expandKeys(a, haAbbreviations)}
		}
	}
	return v
}

func expandKeys(m map[string]any, table map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if full, ok := table[k]; ok {
			if _, clash := m[full]; clash && full != k {
				continue // the full key wins when both are present
			}
			k = full
		}
		out[k] = v
	}
	return out
}

// substituteBase replaces '~' at the start or end of every *_topic value
// (and of availability item topics) with the base topic, wherever '~' was.
func substituteBase(cfg map[string]any) {
	base, ok := cfg["~"].(string)
	if !ok {
		return
	}
	sub := func(s string) string {
		if strings.HasPrefix(s, "~") {
			return base + s[1:]
		}
		if strings.HasSuffix(s, "~") {
			return s[:len(s)-1] + base
		}
		return s
	}
	for k, v := range cfg {
		if s, ok := v.(string); ok && (strings.HasSuffix(k, "_topic") || k == "topic") {
			cfg[k] = sub(s)
		}
	}
	if av, ok := cfg["availability"].([]any); ok {
		for _, it := range av {
			if m, ok := it.(map[string]any); ok {
				if s, ok := m["topic"].(string); ok {
					m["topic"] = sub(s)
				}
			}
		}
	}
}

var haRequired = map[string][]string{
	"sensor": {"state_topic"}, "binary_sensor": {"state_topic"}, "event": {"state_topic", "event_types"},
	"switch": {"command_topic"}, "light": {"command_topic"}, "lock": {"command_topic"},
	"button": {"command_topic"}, "number": {"command_topic"}, "select": {"command_topic", "options"},
	"text": {"command_topic"}, "fan": {"command_topic"}, "siren": {"command_topic"},
	"alarm_control_panel": {"state_topic", "command_topic"}, "scene": {"command_topic"},
	"device_automation": {"topic", "type", "subtype"},
}

// newHAEntity validates one expanded config. A component Home Assistant
// supports but this package does not model gives an unmodelled entity:
// its device says so.
func newHAEntity(key, component, objectID string, cfg map[string]any) (*haEntity, error) {
	substituteBase(cfg)
	if q, ok := cfg["qos"]; ok {
		n, isNum := q.(float64)
		if !isNum || n < 0 || n > 2 || n != float64(int(n)) {
			return nil, fmt.Errorf("qos must be 0, 1 or 2, got %v", q)
		}
	}
	if !haComponents[component] {
		return &haEntity{key: key, component: component, objectID: objectID, cfg: cfg, unmodelled: true,
			dev: mapOrNil(cfg["device"]), origin: originName(cfg)}, nil
	}
	for _, r := range haRequired[component] {
		if v, ok := cfg[r]; !ok || v == nil || v == "" {
			return nil, fmt.Errorf("required key not provided: %s", r)
		}
	}
	for k, v := range cfg {
		if strings.HasSuffix(k, "_topic") || k == "topic" {
			if _, ok := v.(string); !ok && v != nil {
				return nil, fmt.Errorf("%s must be a string", k)
			}
		}
	}
	e := &haEntity{key: key, component: component, objectID: objectID, cfg: cfg, dev: mapOrNil(cfg["device"]), origin: originName(cfg)}
	if cfg["device"] != nil && (e.dev == nil || !hasIdentity(e.dev)) {
		return nil, errors.New("device must be a mapping with identifiers or connections")
	}
	return e, nil
}

func mapOrNil(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func originName(cfg map[string]any) string {
	o, _ := cfg["origin"].(map[string]any)
	n, _ := o["name"].(string)
	return n
}

// str reads a string option (numbers and booleans are rendered as text, as
// Home Assistant's cv.string does).
func (e *haEntity) str(k, def string) string {
	v, ok := e.cfg[k]
	if !ok || v == nil {
		return def
	}
	return model.Stringify(v)
}

func (e *haEntity) has(k string) bool {
	v, ok := e.cfg[k]
	return ok && v != nil && v != ""
}

func (e *haEntity) num(k string) (float64, bool) {
	v, ok := e.cfg[k]
	if !ok {
		return 0, false
	}
	return model.ToFloat(v)
}

func (e *haEntity) list(k string) []any {
	a, _ := e.cfg[k].([]any)
	return a
}

// name returns the entity name; null reports isNull.
func (e *haEntity) name() (name string, isNull, present bool) {
	v, ok := e.cfg["name"]
	if !ok {
		return "", false, false
	}
	if v == nil {
		return "", true, true
	}
	return model.Stringify(v), false, true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	model.SortStrings(out)
	return out
}
