package devices

import (
	"context"
	"fmt"

	"github.com/pilothouse/pilothouse/pilotage"
)

// action is one callable entry and how to carry it out.
type action struct {
	id, name, desc string
	risk           pilotage.Risk
	fields         map[string]*field
	required       []string
	minProps       int
	affects        map[string]string // arg key -> state id
	presets        bool              // a field has presets: Call sends their values for their names
	send           func(ctx context.Context, p Sender, args map[string]any) error
	offBus         bool // sends over HTTP, not MQTT (a webhook notification): CallAsync does not wait for it
	// schema and check replace fields for a LocalAction, whose owner
	// states its input schema and checks it.
	schema map[string]any
	check  func(args map[string]any) error
}

func newAction(id, name, desc string, risk pilotage.Risk) *action {
	return &action{id: id, name: name, desc: desc, risk: risk, fields: map[string]*field{}, affects: map[string]string{}, minProps: 1}
}

func (a *action) inputSchema() map[string]any {
	if a.schema != nil {
		return a.schema
	}
	props := make(map[string]any, len(a.fields))
	for k, f := range a.fields {
		props[k] = f.schema
	}
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if a.minProps > 0 {
		s["minProperties"] = a.minProps
	}
	if len(a.required) > 0 {
		s["required"] = a.required
	}
	return s
}

func (a *action) validate(args map[string]any) error {
	if a.check != nil {
		return a.check(args)
	}
	if len(args) < a.minProps {
		return fmt.Errorf("%s: at least %d argument(s) required", a.id, a.minProps)
	}
	for _, r := range a.required {
		if _, ok := args[r]; !ok {
			return fmt.Errorf("%s: argument %s is required", a.id, r)
		}
	}
	if err := checkProps("", a.fields, args); err != nil {
		return fmt.Errorf("%s: %w", a.id, err)
	}
	return nil
}

// dropSchemas forgets the schemas of built fields: only Call's checks read
// fields once their action's entry exists.
func dropSchemas(fields map[string]*field) {
	for _, f := range fields {
		dropSchema(f)
	}
}

func dropSchema(f *field) {
	if f == nil {
		return
	}
	f.schema = nil
	dropSchemas(f.props)
	dropSchema(f.items)
	for _, a := range f.alts {
		dropSchema(a)
	}
}

// Sender publishes the messages of one call of an action: the catalog's
// sender, which Call, CallAsync and Preview make.
type Sender interface {
	// ID is the action's id, for errors.
	ID() string
	Publish(ctx context.Context, topic string, payload []byte) error
	// PublishJSON publishes v as json.Marshal encodes it.
	PublishJSON(ctx context.Context, topic string, v any) error
	// Value is the live value of state id (nil when unknown): a command
	// may depend on it (a light turned on at its last brightness).
	Value(id string) any
}
