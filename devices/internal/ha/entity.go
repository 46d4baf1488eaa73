package ha

import (
	"errors"
	"slices"
	"strings"

	"github.com/pilothouse/pilothouse/devices/internal/model"
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
	dev := b.spec.ID
	for _, it := range items {
		if b.availSeen[it.topic] {
			continue
		}
		t := model.CompileTemplate(it.tpl)
		if t != nil && t.Unsupported != "" {
			b.gap(name + ": availability " + t.Unsupported)
			continue
		}
		b.availSeen[it.topic] = true
		b.spec.Avail = append(b.spec.Avail, it.topic)
		b.spec.Routes = append(b.spec.Routes, model.TopicRoute{Topic: it.topic, Fn: func(tx *model.Rec, p []byte) {
			v, err := t.RenderMsg(tx, dev+" availability", p)
			if err != nil {
				return
			}
			s := strings.TrimSpace(model.Stringify(v))
			switch {
			case s == it.on || strings.EqualFold(s, it.on):
				tx.SetAvail(dev, it.topic, true, mode)
			case s == it.off || strings.EqualFold(s, it.off):
				tx.SetAvail(dev, it.topic, false, mode)
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
	t := model.CompileTemplate(tplSrc)
	st := model.StateSpec{ID: id, Name: name, Desc: desc, Schema: schema, Class: model.HAClass(x.str("device_class", ""))}
	if t != nil && t.Unsupported != "" {
		st.Unsupported = t.Unsupported
		x.b.gap(name + ": " + t.Unsupported)
	}
	x.b.spec.States = append(x.b.spec.States, st)
	if st.Unsupported != "" {
		return
	}
	dev := x.b.spec.ID
	prop := strings.TrimPrefix(id, dev+".")
	expire := x.expire
	if expire > 0 {
		x.b.spec.Expire = append(x.b.spec.Expire, id)
	}
	warned := false // the first failure of this template is logged (routes run one at a time, under c.ingest)
	x.b.spec.Routes = append(x.b.spec.Routes, model.TopicRoute{Topic: topic, Entity: true, Guards: pilotage.HintsOf(haEntityRisk(x.component)), Fn: func(tx *model.Rec, p []byte) {
		if expire > 0 {
			tx.Fresh(dev, id, expire) // any message, read or not, as Home Assistant resets it
		}
		v, err := t.RenderMsg(tx, id, p)
		if err != nil {
			if !warned && !errors.Is(err, model.ErrNoValue) && !model.NotRendered(err) {
				warned = true
				tx.Log.Warn("home assistant template failed; the state keeps its value", "id", id, "topic", topic, "err", err)
			}
			tx.Touch(dev)
			return
		}
		if conv != nil {
			var ok bool
			if v, ok = conv(v); !ok {
				tx.Touch(dev)
				return
			}
		}
		tx.SetState(dev, id, prop, v)
	}})
}

// newAction adds an action with the risk of the entity's own component
// and class: a light on a node that also has a lock stays control.
func (x *ent) newAction(verb, desc string) *model.Action {
	a := model.NewAction(x.actionID(verb), x.name+" "+verb, desc, haEntityRisk(x.component))
	x.b.spec.Actions = append(x.b.spec.Actions, a)
	return a
}

// finishActions audits the entity's templates, then gives each action it
// added the command topics the entity publishes to (every topic key its
// model read), which the catalog compares across actions.
func (x *ent) finishActions(actionsBefore int) {
	x.auditTemplates(actionsBefore)
	if len(x.b.spec.Actions) <= actionsBefore {
		return
	}
	var topics []string
	for k := range x.read {
		if t := x.str(k, ""); t != "" && strings.HasSuffix(k, "_topic") {
			topics = append(topics, t)
		}
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	for _, a := range x.b.spec.Actions[actionsBefore:] {
		a.Writes = topics
	}
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
