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
	s := &sender{id: id, c: c, dry: true}
	if err := a.Send(ctx, s, norm); err != nil {
		return nil, err
	}
	out := make([]Published, len(s.msgs))
	for i, m := range s.msgs {
		out[i] = Published{Topic: m.topic, URL: m.url, Payload: string(m.payload)}
	}
	return out, nil
}

// recordPost lists a webhook's body instead of posting it (Preview).
func (s *sender) recordPost(url string, body any) error {
	b, err := pilotage.AppendJSON(nil, body)
	if err != nil {
		return err
	}
	s.msgs = append(s.msgs, outMsg{url: url, payload: b})
	return nil
}
