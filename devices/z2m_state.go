package devices

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"
)

// stateRoute merges a (partial) JSON state object into the device; props
// are sorted by key.
func (z *z2mSource) stateRoute(dev string, props []z2mProp) route {
	return func(tx *txn, payload []byte) {
		var obj map[string]any
		if err := json.Unmarshal(payload, &obj); err != nil || obj == nil {
			tx.c.log.Warn("malformed zigbee2mqtt state skipped", "topic", z.base+"/"+dev, "device", dev, "err", err)
			return
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		d := tx.dev(dev)
		d.lastSeen = tx.now
		j := 0
		for _, k := range keys {
			v := obj[k]
			for j < len(props) && props[j].key < k {
				j++
			}
			var p *z2mProp
			if j < len(props) && props[j].key == k {
				p = &props[j]
			}
			switch {
			case p == nil:
				d.obj[k] = v
			case p.event:
				if s, ok := v.(string); ok && s != "" && z.fresh(p.id, s, false, tx.now) {
					tx.fireEvent(dev, p.id, s)
				}
			default:
				if p.number {
					v = coerceNumber(v)
				}
				tx.setState(dev, p.id, p.key, v) // the key kept with the route, not the message's copy
			}
		}
	}
}

// fresh reports whether an event firing is new. Zigbee2MQTT reports one
// press twice, in the JSON state and on <name>/action: the second copy (the
// same value on the other topic within a second) is the duplicate, and it
// consumes the pair, so a genuine second press (on the same topic, or after
// the pair) is never swallowed.
func (z *z2mSource) fresh(id, v string, viaAction bool, now time.Time) bool {
	last, ok := z.lastFire[id]
	if ok && last.value == v && last.viaAction != viaAction && !now.Before(last.at) && now.Sub(last.at) <= time.Second {
		delete(z.lastFire, id)
		return false
	}
	z.lastFire[id] = firing{value: v, viaAction: viaAction, at: now}
	return true
}

func (z *z2mSource) actionRoute(dev, id string) route {
	return func(tx *txn, payload []byte) {
		s := strings.TrimSpace(string(payload))
		if s == "" {
			return
		}
		if z.fresh(id, s, true, tx.now) {
			tx.fireEvent(dev, id, s)
		}
	}
}

func (z *z2mSource) routeAvailability(s *devSpec, topic string) {
	dev := s.id
	s.routes = append(s.routes, topicRoute{topic, func(tx *txn, payload []byte) {
		ok, known := parseAvailability(payload)
		if !known {
			tx.c.log.Warn("unrecognised zigbee2mqtt availability skipped", "topic", topic)
			return
		}
		tx.setAvail(dev, topic, ok, "latest")
	}})
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
