package devices

import (
	"context"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Published is one message a call would send: an MQTT publish (Topic) or
// a webhook POST (URL), with its exact payload.
type Published struct {
	Topic   string `json:"topic,omitempty"`
	URL     string `json:"url,omitempty"`
	Payload string `json:"payload"`
}

// Preview validates args as Call does and returns the messages Call would
// send, computed by the same code, without sending anything: a test run
// shows them so that what a rule would publish can be checked before it
// is deployed.
func (c *Catalog) Preview(ctx context.Context, id string, args map[string]any) ([]Published, error) {
	a, _, norm, err := c.prepare(id, args)
	if err != nil {
		return nil, err
	}
	out := []Published{}
	if err := a.Send(ctx, sender{id: id, record: &out, c: c}, norm); err != nil {
		return nil, err
	}
	return out, nil
}

// recordPost records a webhook body instead of posting it (Preview).
func (s *sender) recordPost(url string, body any) error {
	b, err := pilotage.AppendJSON(nil, body)
	if err != nil {
		return err
	}
	*s.record = append(*s.record, Published{URL: url, Payload: string(b)})
	return nil
}
