package devices

import (
	"context"

	"github.com/pilothouse/pilothouse/devices/internal/model"
)

// sender is the Sender of the producers' actions; these methods are the
// part of it they may use.

// ID is the action's id.
func (s sender) ID() string { return s.id }

// Publish publishes payload on topic as the call's next message.
func (s sender) Publish(ctx context.Context, topic string, payload []byte) error {
	return s.publish(ctx, topic, payload)
}

// PublishJSON publishes v, encoded as json.Marshal does, on topic.
func (s sender) PublishJSON(ctx context.Context, topic string, v any) error {
	return s.publishJSON(ctx, topic, v)
}

// Value is the live value of state id (nil when unknown).
func (s sender) Value(id string) any { return s.value(id) }

// own adapts a send function of the catalog's own actions (notification
// channels, local devices), which use what only the catalog's sender has:
// its HTTP client and Preview's record.
func own(send func(ctx context.Context, p sender, args map[string]any) error) func(context.Context, model.Sender, map[string]any) error {
	return func(ctx context.Context, p model.Sender, args map[string]any) error {
		return send(ctx, p.(sender), args)
	}
}
