package devices

import (
	"errors"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
)

// availability routes the entity's availability topics to its device.
// Home Assistant reads either availability_topic with the entity's
// payload_available/payload_not_available (default online/offline) and
// availability_template, or the availability list, each item with its own
// payloads (default online/offline) and value_template.
func (b *haBuilder) availability(e *haEntity, name string) {
	type item struct{ topic, on, off, tpl string }
	var items []item
	if t := e.str("availability_topic", ""); t != "" {
		items = append(items, item{t, e.str("payload_available", "online"), e.str("payload_not_available", "offline"), e.str("availability_template", "")})
	}
	for _, it := range e.list("availability") {
		m, ok := it.(map[string]any)
		if !ok {
			continue
		}
		sub := &haEntity{cfg: m}
		if t := sub.str("topic", ""); t != "" {
			items = append(items, item{t, sub.str("payload_available", "online"), sub.str("payload_not_available", "offline"), sub.str("value_template", "")})
		}
	}
	mode := e.str("availability_mode", "latest")
	dev := b.spec.id
	for _, it := range items {
		if b.availSeen[it.topic] {
			continue
		}
		t := compileTemplate(it.tpl)
		if t != nil && t.unsupported != "" {
			b.gap(name + ": availability " + t.unsupported)
			continue
		}
		b.availSeen[it.topic] = true
		b.spec.routes = append(b.spec.routes, topicRoute{it.topic, func(tx *rec, p []byte) {
			v, err := t.renderMsg(tx, dev+" availability", p)
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
// A template that cannot be rendered makes the state unsupported.
func (x *ent) addState(id, name, desc string, schema map[string]any, topic, tplSrc string, conv func(any) (any, bool)) {
	if topic == "" {
		return
	}
	t := compileTemplate(tplSrc)
	st := stateSpec{id: id, name: name, desc: desc, schema: schema, class: haClass(x.str("device_class", ""))}
	if t != nil && t.unsupported != "" {
		st.unsupported = t.unsupported
		x.b.gap(name + ": " + t.unsupported)
	}
	x.b.spec.states = append(x.b.spec.states, st)
	if st.unsupported != "" {
		return
	}
	dev := x.b.spec.id
	prop := strings.TrimPrefix(id, dev+".")
	warned := false // the first failure of this template is logged (routes run one at a time, under c.ingest)
	x.b.spec.routes = append(x.b.spec.routes, topicRoute{topic, func(tx *rec, p []byte) {
		v, err := t.renderMsg(tx, id, p)
		if err != nil {
			if !warned && !errors.Is(err, errNoValue) && !errors.Is(err, errMsgBudget) {
				warned = true
				tx.log.Warn("home assistant template failed; the state keeps its value", "id", id, "topic", topic, "err", err)
			}
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

// newAction adds an action with the risk of the entity's own component
// and class: a light on a node that also has a lock stays control.
func (x *ent) newAction(verb, desc string) *action {
	a := newAction(x.actionID(verb), x.name+" "+verb, desc, haEntityRisk(x.component))
	x.b.spec.actions = append(x.b.spec.actions, a)
	return a
}

// gap records what of the device cannot be modelled.
func (b *haBuilder) gap(why string) { b.gaps = append(b.gaps, why) }

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

// haEntityRisk is the risk of an entity's commands: the DeviceTypes row of
// its component (locks, covers, valves, sirens and alarm panels are
// security; the rest control).
func haEntityRisk(component string) pilotage.Risk {
	if component == "alarm_control_panel" {
		component = "alarm_panel"
	}
	return pilotage.DeviceTypeRisk(component)
}
