package model

import (
	"context"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Action is one callable entry and how to carry it out; Validate, with
// the checks of its fields, is in field.go.
type Action struct {
	ID, name, Desc string
	Risk           pilotage.Risk
	Fields         map[string]*Field
	Required       []string
	MinProps       int
	Affects        map[string]string // arg key -> state id
	Presets        bool              // a field has presets: Call sends their values for their names
	Send           func(ctx context.Context, p Sender, args map[string]any) error
	OffBus         bool // sends over HTTP, not MQTT (a webhook notification): CallAsync does not wait for it
	// Writes are the topics Send may publish to: the catalog shows an
	// action whose topic another action also writes at the higher risk.
	Writes []string
	writes [1]string // Writes of an action with one topic, without an allocation of its own (WritesTo)
	// schema and check replace fields for a LocalAction, whose owner
	// states its input schema and checks it.
	Schema map[string]any
	Check  func(args map[string]any) error
}

func NewAction(id, name, desc string, risk pilotage.Risk) *Action {
	return &Action{ID: id, name: name, Desc: desc, Risk: risk, Fields: map[string]*Field{}, Affects: map[string]string{}, MinProps: 1}
}

// WritesTo sets Writes to the one topic Send publishes to.
func (a *Action) WritesTo(topic string) {
	a.writes[0] = topic
	a.Writes = a.writes[:]
}

func (a *Action) inputSchema() map[string]any {
	if a.Schema != nil {
		return a.Schema
	}
	props := make(map[string]any, len(a.Fields))
	for k, f := range a.Fields {
		props[k] = f.Schema
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if a.MinProps > 0 {
		s["minProperties"] = a.MinProps
	}
	if len(a.Required) > 0 {
		s["required"] = a.Required
	}
	return s
}

// dropSchemas forgets the schemas of built fields: only Call's checks read
// fields once their action's entry exists.
func dropSchemas(fields map[string]*Field) {
	for _, f := range fields {
		dropSchema(f)
	}
}

func dropSchema(f *Field) {
	if f == nil {
		return
	}
	f.Schema = nil
	dropSchemas(f.Props)
	dropSchema(f.items)
	for _, a := range f.alts {
		dropSchema(a)
	}
}

// Sender collects the messages of one call of an action, in the order
// they are to be published (QoS 1, not retained): the catalog's sender,
// which Call, CallAsync and Preview make and which sends, or only lists,
// them once Send has returned.
type Sender interface {
	// ID is the action's id, for errors.
	ID() string
	// Add adds payload on topic as the call's next message.
	Add(topic string, payload []byte)
	// AddJSON adds v, as json.Marshal encodes it, on topic.
	AddJSON(topic string, v any) error
	// Value is the live value of state id (nil when unknown): a command
	// may depend on it (a light turned on at its last brightness).
	Value(id string) any
}
