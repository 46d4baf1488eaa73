package z2m

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// The work one bridge/devices list may ask for is bounded before it is
// done, whoever publishes it. A device past a bound stays in the catalog,
// not modelled, its description saying which bound (Build); the rest of
// the list is modelled as usual. Measured against the converter library
// (zigbee-herdsman-converters 26.112: 4,516 definitions, 48,880 exposes,
// devices/testdata/zhc) and the real capture in devices/testdata/mqtt-real
// (13 devices, 136 exposes and features, the largest 38):
const (
	// MaxExposes bounds the exposes and features (each composite's
	// features and a list's item type count) of one device: the library's
	// largest, Inovelli's VZM32-SN, has 223 (121 exposes), 4.6 times less.
	MaxExposes = 1024
	// MaxExposeDepth bounds how deep features nest (an expose is 1, its
	// features 2, ...): the library's deepest is 6.
	MaxExposeDepth = 12
	// MaxListExposes bounds the exposes and features of a whole list:
	// above the whole library as one network (48,880 exposes), 480 times
	// the real capture. A list of MaxDevices devices averages 8 each (the
	// library averages 10.8); a device whose exposes do not fit in what
	// the devices before it left is not modelled. Its cost: about 35 ms of CPU and 2 KB of heap per 30
	// exposes modelled.
	MaxListExposes = 65536
)

// List is a parsed bridge/devices list, not yet the source's (Install).
// Over counts its devices past a bound; FirstOver names the first and
// says which bound.
type List struct {
	devices   []Head
	raws      []json.RawMessage
	exposes   int
	max       int // MaxListExposes, or a test's
	Over      int
	FirstOver string
}

// Devices is the number of devices listed.
func (l *List) Devices() int { return len(l.devices) }

// exposeShape is an expose read only for its size.
type exposeShape struct {
	Features []exposeShape `json:"features"`
	ItemType *exposeShape  `json:"item_type"`
}

// shapeSize counts the exposes and features of es and how deep they nest
// (es at depth).
func shapeSize(es []exposeShape, depth int) (n, deepest int) {
	deepest = depth - 1
	for i := range es {
		n++
		deepest = max(deepest, depth)
		sub := es[i].Features
		if it := es[i].ItemType; it != nil {
			sub = append(sub[:len(sub):len(sub)], *it)
		}
		k, d := shapeSize(sub, depth+1)
		n, deepest = n+k, max(deepest, d)
	}
	return n, deepest
}

// parseHead reads a device's head and the size of its definition (not
// its contents: each definition is decoded when its device is built).
func parseHead(b []byte) (Head, error) {
	var h struct {
		IEEE         string `json:"ieee_address"`
		FriendlyName string `json:"friendly_name"`
		Type         string `json:"type"`
		Disabled     bool   `json:"disabled"`
		Definition   *struct {
			Exposes []exposeShape `json:"exposes"`
		} `json:"definition"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		return Head{}, err
	}
	d := Device{IEEE: h.IEEE, FriendlyName: h.FriendlyName, Type: h.Type, Disabled: h.Disabled}
	head := headOf(&d)
	if h.Definition == nil {
		return head, nil
	}
	n, depth := shapeSize(h.Definition.Exposes, 1)
	head.exposes = n
	switch {
	case n > MaxExposes:
		head.over = fmt.Sprintf("its definition lists %d exposes and features, over the %d a device may have", n, MaxExposes)
	case depth > MaxExposeDepth:
		head.over = fmt.Sprintf("its features nest %d deep, over the %d they may", depth, MaxExposeDepth)
	}
	return head, nil
}

// ParseDevices reads a bridge/devices payload into a List without
// touching the source (no lock needed), bounding its exposes and features
// at maxList (MaxListExposes); nil for a malformed payload or, refused
// true, one over MaxDevices (logged).
func ParseDevices(log *slog.Logger, base string, payload []byte, maxList int) (l *List, refused bool) {
	topic := base + "/bridge/devices"
	var raws []json.RawMessage
	if err := json.Unmarshal(payload, &raws); err != nil {
		log.Warn("malformed zigbee2mqtt bridge/devices skipped", "topic", topic, "err", err)
		return nil, false
	}
	if len(raws) > MaxDevices {
		log.Warn("zigbee2mqtt bridge/devices lists more devices than a network has; the catalog keeps the previous list",
			"topic", topic, "devices", len(raws), "max_devices", MaxDevices)
		return nil, true
	}
	l = &List{devices: make([]Head, 0, len(raws)), raws: make([]json.RawMessage, 0, len(raws)), max: maxList}
	for _, r := range raws {
		h, err := parseHead(r)
		if err != nil {
			log.Warn("malformed zigbee2mqtt bridge/devices skipped", "topic", topic, "err", err)
			return nil, false
		}
		if h.ieee == "" && h.friendlyName == "" {
			log.Warn("zigbee2mqtt device without ieee_address and friendly_name skipped", "topic", topic)
			continue
		}
		l.add(h, r)
	}
	if l.Over > 0 {
		log.Warn("zigbee2mqtt devices not modelled: past the bounds of a device list's work; each says why in its description",
			"topic", topic, "not_modelled", l.Over, "first", l.FirstOver, "max_exposes", MaxExposes, "max_list_exposes", maxList)
	}
	return l, false
}

// add appends a device, marked over the list's bound when its exposes
// do not fit in what the devices before it left (a smaller one after it
// may still fit).
func (l *List) add(h Head, raw json.RawMessage) {
	if h.over == "" && !h.skip {
		if l.exposes+h.exposes > l.max {
			h.over = fmt.Sprintf("its %d exposes and features do not fit in the %d of a device list (the devices before it took %d)", h.exposes, l.max, l.exposes)
		} else {
			l.exposes += h.exposes
		}
	}
	if h.over != "" {
		l.Over++
		if l.FirstOver == "" {
			l.FirstOver = h.friendlyName + ": " + h.over
		}
	}
	if h.over != "" {
		raw = json.RawMessage("over:" + h.over) // its cache key: none of its JSON is kept
	} else {
		raw = bytes.Clone(raw) // not the payload's: a list past its bounds is not kept whole
	}
	l.devices = append(l.devices, h)
	l.raws = append(l.raws, raw)
}

// Install makes l the source's device list.
func (z *Source) Install(l *List) {
	z.devices, z.raws, z.Listed = l.devices, l.raws, true
}

// buildOver is the spec of a device past a bound: listed, its
// availability routed, not modelled, its description saying why.
func (z *Source) buildOver(id string, h *Head) *model.Spec {
	d := Device{FriendlyName: h.friendlyName, IEEE: h.ieee}
	s := &model.Spec{ID: id, Name: d.FriendlyName, Source: "zigbee2mqtt"}
	n := z2mDeviceNames(s, id, &d, z.base)
	s.Z2MTopic, s.Z2MAddr = n.topic, d.IEEE
	z.routeAvailability(s, n.avail)
	s.Desc = "Zigbee device not modelled: " + h.over + "; no states are known."
	s.Tags = append(s.Tags, model.TagUnmodelled, "over_bound")
	s.Fidelity = model.FidelityNone
	return s
}

// todo is a device a Build claimed an id for but left to build.
type todo struct {
	i   int
	id  string
	key model.IDKey
}

// BuildMore builds, until until (one at least), the devices the last
// Build left, with the ids it claimed: only while nothing else rebuilt
// since (the catalog's caller knows). more says some are left.
func (z *Source) BuildMore(log *slog.Logger, ids *model.IDTable, until time.Time) (out []*model.Spec, more bool) {
	n := 0
	for n < len(z.todo) && (n == 0 || time.Now().Before(until)) {
		td := z.todo[n]
		n++
		ent, ok := z.buildOne(log, td.id, td.i)
		if !ok {
			continue
		}
		z.cache[ent.spec.ID] = ent
		ids.Share(td.key, ent.spec.ID)
		out = append(out, ent.spec)
		z.built[z.devices[td.i].ieee] = ent.spec
	}
	z.todo = z.todo[n:]
	if len(z.todo) > 0 {
		return out, true
	}
	return z.withGroups(log, ids, out, false), false // every member built: the groups again
}

// withGroups appends the groups' specs to out, built from every member's
// spec (unchanged groups from their cache), and drops the specs by
// address once no BuildMore is left (more false) so the catalog does not
// hold a second index of its devices.
func (z *Source) withGroups(log *slog.Logger, ids *model.IDTable, out []*model.Spec, more bool) []*model.Spec {
	out = append(out, z.buildGroups(log, ids, z.built)...)
	if !more {
		z.built = nil
	}
	return out
}
