package z2m

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// Zigbee2MQTT's device topics on the wire: the state, action and
// availability messages in (the routes), the set and get commands out.

// stateRoute merges a (partial) JSON state object into the device; props
// are sorted by key. The common flat message is read without building a
// map; anything else goes through json.Unmarshal.
func (z *Source) stateRoute(dev string, props []z2mProp) model.Route {
	return func(tx *model.Rec, payload []byte) {
		var buf [16]flatMember
		if ms, ok := parseFlat(payload, buf[:0]); ok {
			tx.Touch(dev)
			j := 0
			for _, m := range ms {
				if p := findProp(props, &j, m.key); p != nil {
					z.applyProp(tx, dev, p, m.val)
				} else {
					tx.SetProp(dev, string(m.key), m.val)
				}
			}
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(payload, &obj); err != nil || obj == nil {
			tx.Log.Warn("malformed zigbee2mqtt state skipped", "topic", z.base+"/"+dev, "device", dev, "err", err)
			return
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		tx.Touch(dev)
		j := 0
		for _, k := range keys {
			if p := findProp(props, &j, k); p != nil {
				z.applyProp(tx, dev, p, obj[k])
			} else {
				tx.SetProp(dev, k, obj[k])
			}
		}
	}
}

// findProp advances *j over props (sorted by key) to key, which must not
// be below the keys asked before.
func findProp[K string | []byte](props []z2mProp, j *int, key K) *z2mProp {
	for *j < len(props) && props[*j].key < string(key) {
		*j++
	}
	if *j < len(props) && props[*j].key == string(key) {
		return &props[*j]
	}
	return nil
}

// applyProp records the value of a routed key.
func (z *Source) applyProp(tx *model.Rec, dev string, p *z2mProp, v any) {
	if p.event {
		if s, ok := v.(string); ok && s != "" && z.fresh(p.id, s, false, tx.Now) {
			tx.FireEvent(dev, p.id, s)
		}
		return
	}
	if p.number {
		v = coerceNumber(v)
	}
	tx.SetState(dev, p.id, p.key, v) // the key kept with the route, not the message's copy
}

// command is the Send of the set and get actions: the call's checked
// arguments, published as one JSON object to topic (<name>/set or /get).
func command(topic string) func(context.Context, model.Sender, map[string]any) error {
	return func(ctx context.Context, p model.Sender, args map[string]any) error {
		return p.AddJSON(topic, args)
	}
}

// flatMember is one member of a flat JSON state object.
type flatMember struct {
	key []byte
	val any
}

// parseFlat decodes the common state message, a JSON object of scalars
// whose keys and strings are plain ASCII without escapes and whose keys are
// unique, exactly as json.Unmarshal into a map[string]any would (numbers by
// strconv.ParseFloat, as encoding/json does), and appends its members to ms
// sorted by key. It reports false for anything else (nested values,
// escapes, duplicate keys, a number out of range, invalid JSON, no object),
// which the caller hands to json.Unmarshal.
func parseFlat(p []byte, ms []flatMember) ([]flatMember, bool) {
	if !json.Valid(p) {
		return nil, false
	}
	i := skipSpace(p, 0)
	if p[i] != '{' {
		return nil, false
	}
	i = skipSpace(p, i+1)
	if p[i] == '}' {
		return ms, true
	}
	for {
		k, j, ok := plainString(p, i)
		if !ok {
			return nil, false
		}
		i = skipSpace(p, skipSpace(p, j)+1) // past ':'
		var v any
		switch c := p[i]; {
		case c == '"':
			s, j, ok := plainString(p, i)
			if !ok {
				return nil, false
			}
			v, i = string(s), j
		case c == 't':
			v, i = true, i+4
		case c == 'f':
			v, i = false, i+5
		case c == 'n':
			v, i = nil, i+4
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(p) && strings.IndexByte("0123456789.eE+-", p[j]) >= 0 {
				j++
			}
			f, err := strconv.ParseFloat(string(p[i:j]), 64)
			if err != nil {
				return nil, false
			}
			v, i = f, j
		default:
			return nil, false // an object or an array
		}
		ms = append(ms, flatMember{k, v})
		i = skipSpace(p, i)
		if p[i] != ',' {
			break // '}'
		}
		i = skipSpace(p, i+1)
	}
	slices.SortFunc(ms, func(a, b flatMember) int { return bytes.Compare(a.key, b.key) })
	for n := 1; n < len(ms); n++ {
		if bytes.Equal(ms[n-1].key, ms[n].key) {
			return nil, false
		}
	}
	return ms, true
}

// plainString returns the contents of the JSON string starting at p[i]
// and the index after it; false when it holds an escape or a non-ASCII
// byte (whose decoding json.Unmarshal is left to).
func plainString(p []byte, i int) ([]byte, int, bool) {
	if p[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(p); j++ {
		switch c := p[j]; {
		case c == '"':
			return p[i+1 : j], j + 1, true
		case c == '\\' || c >= 0x80:
			return nil, 0, false
		}
	}
	return nil, 0, false
}

func skipSpace(p []byte, i int) int {
	for i < len(p) && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r') {
		i++
	}
	return i
}

// fresh reports whether an event firing is new. Zigbee2MQTT reports one
// press twice, in the JSON state and on <name>/action: the second copy (the
// same value on the other topic within a second) is the duplicate, and it
// consumes the pair, so a genuine second press (on the same topic, or after
// the pair) is never swallowed.
func (z *Source) fresh(id, v string, viaAction bool, now time.Time) bool {
	last, ok := z.lastFire[id]
	if ok && last.value == v && last.viaAction != viaAction && !now.Before(last.at) && now.Sub(last.at) <= time.Second {
		delete(z.lastFire, id)
		return false
	}
	z.lastFire[id] = firing{value: v, viaAction: viaAction, at: now}
	return true
}

func (z *Source) actionRoute(dev, id string) model.Route {
	return func(tx *model.Rec, payload []byte) {
		s := strings.TrimSpace(string(payload))
		if s == "" {
			return
		}
		if z.fresh(id, s, true, tx.Now) {
			tx.FireEvent(dev, id, s)
		}
	}
}

func (z *Source) routeAvailability(s *model.Spec, topic string) {
	dev := s.ID
	s.Z2MAvail = topic
	s.Routes = append(s.Routes, model.TopicRoute{Topic: topic, Fn: func(tx *model.Rec, payload []byte) {
		ok, known := parseAvailability(payload)
		if !known {
			tx.Log.Warn("unrecognised zigbee2mqtt availability skipped", "topic", topic)
			return
		}
		tx.SetAvail(dev, topic, ok, "latest")
	}})
}

// AvailabilityOn reads whether a bridge/info payload's config has
// availability on: "availability": true or an object (Zigbee2MQTT 2
// writes "enabled"; 1.x's object means on), or the legacy
// "advanced": {"availability_timeout": n > 0}. known is false for a
// payload that is no bridge/info.
func AvailabilityOn(p []byte) (on, known bool) {
	var info struct {
		Config *struct {
			Availability json.RawMessage `json:"availability"`
			Advanced     struct {
				Timeout float64 `json:"availability_timeout"`
			} `json:"advanced"`
		} `json:"config"`
	}
	if json.Unmarshal(p, &info) != nil || info.Config == nil {
		return false, false
	}
	a := strings.TrimSpace(string(info.Config.Availability))
	switch {
	case a == "true":
		return true, true
	case strings.HasPrefix(a, "{"):
		var o struct {
			Enabled *bool `json:"enabled"`
		}
		if json.Unmarshal([]byte(a), &o) != nil {
			return false, true
		}
		return o.Enabled == nil || *o.Enabled, true
	}
	return info.Config.Advanced.Timeout > 0, true
}

// parseAvailability reads {"state":"online"} or a bare online/offline,
// case-insensitively.
func parseAvailability(p []byte) (ok, known bool) {
	s := strings.TrimSpace(string(p))
	if strings.HasPrefix(s, "{") {
		var v struct {
			State string `json:"state"`
		}
		if json.Unmarshal(p, &v) != nil {
			return false, false
		}
		s = v.State
	}
	switch strings.ToLower(strings.Trim(s, `"`)) {
	case "online":
		return true, true
	case "offline":
		return false, true
	}
	return false, false
}

func coerceNumber(v any) any {
	if s, ok := v.(string); ok {
		if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil {
			return f
		}
	}
	return v
}
