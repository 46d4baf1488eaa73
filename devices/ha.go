package devices

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
)

// haSource holds the accepted Home Assistant discovery configs.
type haSource struct {
	prefix   string
	entities map[string]*haEntity // by discovery topic ("#cmp" suffix for device-based)
	devCmps  map[string][]string  // device discovery topic -> its entity keys
	nextVer  uint64
	cache    map[string]*devSpec // group fingerprint -> spec
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
}

func newHASource(prefix string) *haSource {
	return &haSource{prefix: prefix, entities: map[string]*haEntity{}, devCmps: map[string][]string{}}
}

var haIDRe = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// haComponents lists the components this package understands; others are
// accepted silently and produce no entries.
var haComponents = map[string]bool{
	"binary_sensor": true, "sensor": true, "switch": true, "light": true, "lock": true, "cover": true,
	"climate": true, "button": true, "event": true, "number": true, "select": true, "text": true,
	"fan": true, "siren": true, "valve": true, "alarm_control_panel": true, "device_automation": true,
}

// handleConfig applies one discovery message; it reports whether the set of
// accepted configs changed.
func (h *haSource) handleConfig(log *slog.Logger, topic string, payload []byte) bool {
	rest := strings.TrimSuffix(strings.TrimPrefix(topic, h.prefix+"/"), "/config")
	parts := strings.Split(rest, "/")
	for _, p := range parts[1:] {
		if !haIDRe.MatchString(p) {
			log.Warn("illegal discovery topic skipped", "topic", topic)
			return false
		}
	}
	if len(parts) < 2 || len(parts) > 3 {
		log.Warn("illegal discovery topic skipped", "topic", topic)
		return false
	}
	if parts[0] == "device" {
		if len(parts) != 2 {
			log.Warn("illegal device discovery topic skipped", "topic", topic)
			return false
		}
		return h.handleDevice(log, topic, payload)
	}
	if len(payload) == 0 {
		return h.remove(topic)
	}
	raw, err := decodeObject(payload)
	if err != nil {
		log.Warn("malformed discovery payload skipped", "topic", topic, "err", err)
		return false
	}
	if len(raw) == 1 && raw["migrate_discovery"] != nil {
		return h.remove(topic) // unloaded: the device-based config takes over
	}
	ent, err := newHAEntity(topic, parts[0], parts[len(parts)-1], expandConfig(raw))
	if err != nil {
		log.Warn("invalid discovery config skipped", "topic", topic, "err", err)
		return false
	}
	if ent == nil {
		log.Debug("discovery component not supported, ignored", "topic", topic, "component", parts[0])
		return h.remove(topic)
	}
	h.nextVer++
	ent.ver = h.nextVer
	h.entities[topic] = ent
	return true
}

func (h *haSource) remove(topic string) bool {
	if _, ok := h.entities[topic]; !ok {
		return false
	}
	delete(h.entities, topic)
	return true
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

// handleDevice applies device-based discovery: the whole payload is checked
// first, then replaces every component of that device topic.
func (h *haSource) handleDevice(log *slog.Logger, topic string, payload []byte) bool {
	if len(payload) == 0 {
		return h.replaceDevice(topic, nil)
	}
	raw, err := decodeObject(payload)
	if err != nil {
		log.Warn("malformed device discovery payload skipped", "topic", topic, "err", err)
		return false
	}
	cfg := expandConfig(raw)
	ents, err := h.deviceEntities(topic, cfg)
	if err != nil {
		log.Warn("invalid device discovery config skipped", "topic", topic, "err", err)
		return false
	}
	return h.replaceDevice(topic, ents)
}

func (h *haSource) deviceEntities(topic string, cfg map[string]any) ([]*haEntity, error) {
	if _, ok := cfg["device"].(map[string]any); !ok {
		return nil, errors.New("device-based discovery without a device mapping")
	}
	cmps, ok := cfg["components"].(map[string]any)
	if !ok {
		return nil, errors.New("components (cmps) must be a mapping")
	}
	shared := map[string]any{}
	for k, v := range cfg {
		if k != "components" {
			shared[k] = v
		}
	}
	var out []*haEntity
	for _, id := range sortedKeys(cmps) {
		c, ok := cmps[id].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("component %s is not a mapping", id)
		}
		c = expandKeys(c, haAbbreviations)
		platform, _ := c["platform"].(string)
		if platform == "" {
			return nil, fmt.Errorf("component %s has no platform (p)", id)
		}
		if !haIDRe.MatchString(id) {
			return nil, fmt.Errorf("component id %q is illegal", id)
		}
		if len(c) == 1 {
			continue // {"p": "sensor"} alone removes the component
		}
		merged := map[string]any{}
		for k, v := range shared {
			merged[k] = v
		}
		for k, v := range c {
			merged[k] = expandValue(k, v)
		}
		ent, err := newHAEntity(topic+"#"+id, platform, id, merged)
		if err != nil {
			return nil, fmt.Errorf("component %s: %w", id, err)
		}
		if ent != nil {
			out = append(out, ent)
		}
	}
	return out, nil
}

func (h *haSource) replaceDevice(topic string, ents []*haEntity) bool {
	old := h.devCmps[topic]
	changed := len(old) != len(ents)
	for _, k := range old {
		delete(h.entities, k)
	}
	keys := make([]string, 0, len(ents))
	for _, e := range ents {
		h.nextVer++
		e.ver = h.nextVer
		h.entities[e.key] = e
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
	"alarm_control_panel": {"state_topic", "command_topic"},
	"device_automation":   {"topic", "type", "subtype"},
}

// newHAEntity validates one expanded config. It returns nil, nil for a
// component this package does not model.
func newHAEntity(key, component, objectID string, cfg map[string]any) (*haEntity, error) {
	substituteBase(cfg)
	if q, ok := cfg["qos"]; ok {
		n, isNum := q.(float64)
		if !isNum || n < 0 || n > 2 || n != float64(int(n)) {
			return nil, fmt.Errorf("qos must be 0, 1 or 2, got %v", q)
		}
	}
	if !haComponents[component] {
		return nil, nil
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
	e := &haEntity{key: key, component: component, objectID: objectID, cfg: cfg}
	if d, ok := cfg["device"].(map[string]any); ok {
		e.dev = d
	} else if cfg["device"] != nil {
		return nil, errors.New("device must be a mapping")
	}
	if o, ok := cfg["origin"].(map[string]any); ok {
		e.origin, _ = o["name"].(string)
	}
	return e, nil
}

// str reads a string option (numbers and booleans are rendered as text, as
// Home Assistant's cv.string does).
func (e *haEntity) str(k, def string) string {
	v, ok := e.cfg[k]
	if !ok || v == nil {
		return def
	}
	return stringify(v)
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
	return toFloat(v)
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
	return stringify(v), false, true
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}
