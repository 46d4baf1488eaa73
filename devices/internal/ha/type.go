package ha

import (
	"log/slog"
	"sort"
	"strings"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/pilotage"
)

// haDeviceType is the first row of pilotage.DeviceTypes the components
// of the device's entities match (its config and diagnostic entities only
// when it has no other); only a device no component types (sensors) is
// typed by a word of a row in its name, manufacturer or model (for an
// entity without a device block, its name and object id): model text
// never turns a fan into a valve.
func haDeviceType(g *haGroup, name string) string {
	comps := map[string]bool{}
	words := []string{name, g.devField("manufacturer"), g.devField("model")}
	controls := 0
	primary := false // config and diagnostic entities do not type a device that has others
	for _, e := range g.ents {
		primary = primary || !e.has("entity_category")
	}
	for _, e := range g.ents {
		if primary && e.has("entity_category") {
			continue
		}
		comps[e.component] = true
		switch e.component {
		case "switch", "light", "lock", "cover", "climate", "number", "select", "text", "fan", "siren", "valve", "alarm_control_panel":
			controls++
		}
		if e.dev == nil {
			n, _, _ := e.name()
			words = append(words, n, e.objectID)
		}
	}
	for _, row := range pilotage.DeviceTypes {
		if row.Type != "sensor" && haMeans(row.Type, comps, controls) {
			return row.Type
		}
	}
	text := strings.ToLower(strings.Join(words, " "))
	for _, row := range pilotage.DeviceTypes {
		for _, w := range row.Words {
			if strings.Contains(text, w) {
				return row.Type
			}
		}
	}
	return "sensor"
}

// haMeans reports whether a device with these components is of type t.
func haMeans(t string, comps map[string]bool, controls int) bool {
	switch t {
	case "lock", "cover", "siren", "climate", "light", "switch", "fan", "valve", "binary_sensor":
		return comps[t]
	case "alarm_panel":
		return comps["alarm_control_panel"]
	case "remote":
		return (comps["event"] || comps["device_automation"]) && controls <= 1
	case "sensor":
		return true
	}
	return false // garage_door: a garage door driven as a cover is a cover
}

// haPrimaryOrder is the order entities claim the device's primary slot:
// controllable components first; plain sensors claim device-class names
// before binary sensors (battery vs battery_low).
var haPrimaryOrder = []string{"lock", "alarm_control_panel", "valve", "siren", "cover", "climate", "light", "fan", "switch",
	"event", "device_automation", "sensor", "binary_sensor"}

func buildHADevice(log *slog.Logger, id, name string, g *haGroup, pins slots) *model.Spec {
	s := &model.Spec{ID: id, Name: name, Source: "homeassistant",
		Manufacturer: g.devField("manufacturer"), ModelName: g.devField("model"), Area: g.devField("suggested_area")}
	s.Typ = haDeviceType(g, name)
	desc := strings.TrimSpace(s.Manufacturer + " " + s.ModelName)
	if o := g.firstSeen(func(e *haEntity) string { return e.origin }); o != "" {
		desc = strings.TrimSpace(desc + " (discovered via " + o + ")")
	}
	if desc == "" {
		desc = "Device from Home Assistant MQTT discovery"
	}
	s.Desc = desc
	b := &haBuilder{spec: s, usedKeys: map[string]bool{}, availSeen: map[string]bool{}, lone: len(g.ents) == 1, pins: pins}
	ents := append([]*haEntity(nil), g.ents...)
	rank := map[string]int{}
	for i, t := range haPrimaryOrder {
		rank[t] = i + 1
	}
	sort.SliceStable(ents, func(i, j int) bool {
		ri, rj := rank[ents[i].component], rank[ents[j].component]
		if ri == 0 {
			ri = len(rank) + 1
		}
		if rj == 0 {
			rj = len(rank) + 1
		}
		return ri < rj
	})
	for _, e := range ents {
		b.entity(e, name)
	}
	b.finish(log)
	return s
}

// finish marks what could not be modelled (tag, description, one log
// line per discovery version).
func (b *haBuilder) finish(log *slog.Logger) {
	s := b.spec
	if len(b.gaps) == 0 {
		return
	}
	s.Fidelity = model.FidelityPartial
	if len(s.States)+len(s.Events)+len(s.Actions) == 0 {
		s.Fidelity = model.FidelityNone
		s.Tags = append(s.Tags, model.TagUnmodelled)
	} else {
		s.Tags = append(s.Tags, model.TagPartial)
	}
	s.Desc += " Not fully modelled: " + strings.Join(b.gaps, "; ") + "."
	log.Warn("home assistant device not fully modelled", "device", s.Name, "id", s.ID, "missing", b.gaps)
}
