package devices

import (
	"strings"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/pilotage"
)

// Two more kinds of topic are read, not written, by Pilothouse, and a
// command written there changes what it believes. A discovery config
// topic (<prefix>/…/config, what the catalog reads as one) can add,
// change or remove any device, so it is security; other topics under the
// prefix are not configs (Home Assistant's own examples command
// <prefix>/switch/irrigation/set), so only what reads them counts. One a device's state is read from can fake
// that state, so it takes the risk of the riskiest entry reading it: a
// Home Assistant entity's state topics its entity's (a lock's state is
// a lock's), a topic read into the whole device (its availability, a
// Zigbee2MQTT device's topic, events) the device's riskiest action's.
// A device writing a topic only its own device-wide routes read is not
// raised by itself; one of its entities writing another's state is.
// Only topics read into a state riskier than control are filed (a
// writer is at least control), and only the changed specs' routes.

// reader is a device reading a topic: the risk a command written there
// takes from another device (hints), and from the device itself (own:
// only what its entities' states guard).
type reader struct {
	dev        string
	hints, own pilotage.RiskHints
}

// read files (d > 0) or takes out (d < 0) the topics device s reads into
// a state riskier than control; ents are its entries (for d > 0). The
// writers of each topic are checked again in this commit. A filter
// (+, #, as OpenMQTTGateway's state topics) is not filed: a command to a
// topic it matches is not raised by it (a known gap, docs/security.md).
func (t *topicShares) read(s *model.Spec, ents map[string]*pilotage.Entry, d int) {
	if len(s.Routes) == 0 {
		return
	}
	key := specKey(s)
	dev := pilotage.RiskHints{ReadOnly: true}
	for _, a := range s.Actions {
		if e := ents[a.ID]; e != nil {
			dev = pilotage.Aggregate(dev, e.RiskHints)
		}
	}
	for _, r := range s.Routes {
		if strings.ContainsAny(r.Topic, "+#") {
			continue
		}
		if d < 0 {
			t.unread(r.Topic, key)
			continue
		}
		rd := reader{dev: key, hints: dev, own: pilotage.RiskHints{ReadOnly: true}}
		if r.Entity {
			rd.hints, rd.own = r.Guards, r.Guards
		}
		if !rd.hints.Destructive && !rd.hints.OpenWorld {
			continue
		}
		t.fileRead(r.Topic, rd)
	}
}

// fileRead files reader rd of topic (one per device: its risks add up).
func (t *topicShares) fileRead(topic string, rd reader) {
	rs := t.reads[topic]
	t.rewritten(topic)
	for i := range rs {
		if rs[i].dev == rd.dev {
			rs[i].hints, rs[i].own = pilotage.Aggregate(rs[i].hints, rd.hints), pilotage.Aggregate(rs[i].own, rd.own)
			return
		}
	}
	t.reads[topic] = append(rs, rd)
}

// unread takes device dev out of the readers of topic.
func (t *topicShares) unread(topic, dev string) {
	rs := t.reads[topic]
	for i := range rs {
		if rs[i].dev != dev {
			continue
		}
		t.rewritten(topic)
		if len(rs) == 1 {
			delete(t.reads, topic)
		} else {
			t.reads[topic] = append(rs[:i:i], rs[i+1:]...)
		}
		return
	}
}

// rewritten checks the writers of topic again in this commit.
func (t *topicShares) rewritten(topic string) {
	if k, ok := t.keys[topic]; ok {
		t.added = append(t.added, k.writerIDs()...)
	}
}

// readRisk raises eff, the risk writer id is shown at so far, for what
// its topics change of what Pilothouse reads: discovery, and the states
// of another device (or of another of its own entities), saying why.
func (t *topicShares) readRisk(id string, w writer, eff pilotage.RiskHints, why string) (pilotage.RiskHints, string) {
	dev := t.devOf[id]
	for _, topic := range w.writes {
		if strings.HasPrefix(topic, t.disc) && strings.HasSuffix(topic, "/config") && pilotage.Aggregate(eff, security) != eff {
			eff, why = pilotage.Aggregate(eff, security), "its command topic "+topic+" is a discovery config topic ("+t.disc+"…/config): it can add, change or remove any device"
		}
		for _, rd := range t.reads[topic] {
			h := rd.hints
			if rd.dev == dev {
				h = rd.own
			}
			if agg := pilotage.Aggregate(eff, h); agg != eff {
				eff, why = agg, "its command topic "+topic+" is the topic "+rd.dev+"'s state is read from: it can fake that state"
			}
		}
	}
	return eff, why
}
