package devices

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/pilotage"
)

// normalize turns Go numeric types into float64 so that checks and JSON
// encoding agree.
func normalize(v any) any {
	switch x := v.(type) {
	case int:
		return float64(x)
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case float32:
		return float64(x)
	case uint8:
		return float64(x)
	case uint:
		return float64(x)
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return f
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	}
	return v
}

// isNormal reports whether normalize leaves v as it is (and a map of such
// values needs no copy).
func isNormal(v any) bool {
	switch x := v.(type) {
	case int, int32, int64, float32, uint8, uint, json.Number:
		return false
	case map[string]any:
		for _, e := range x {
			if !isNormal(e) {
				return false
			}
		}
	}
	return true
}

// sender publishes the messages of one Call. With held set (CallAsync),
// the last message is held back for its caller to publish; every earlier
// one is published, and acknowledged, before the next is.
type sender struct {
	id   string
	conn mqtt.PubSub
	http *http.Client
	held *heldMessage
	// record, when set (Preview), collects the messages instead of
	// sending them.
	record *[]Published
	// c reads the live state a command depends on (a light turned on
	// at its last brightness).
	c *Catalog
}

// value is the live value of state id (nil when unknown).
func (s *sender) value(id string) any {
	if s.c == nil {
		return nil
	}
	l, _ := s.c.Live(id)
	return l.Value
}

func (s *sender) publish(ctx context.Context, topic string, payload []byte) error {
	if s.record != nil {
		*s.record = append(*s.record, Published{Topic: topic, Payload: string(payload)})
		return nil
	}
	if s.conn == nil {
		return fmt.Errorf("devices: %s: %w", s.id, mqtt.ErrNotConnected)
	}
	if s.held != nil {
		prev := *s.held
		*s.held = heldMessage{topic: topic, payload: payload, ok: true}
		if !prev.ok {
			return nil
		}
		topic, payload = prev.topic, prev.payload
	}
	if err := s.conn.Publish(ctx, topic, payload, 1, false); err != nil {
		return publishError(s.id, topic, err)
	}
	return nil
}

// publishError is the error of a publish to topic of action id's call.
func publishError(id, topic string, err error) error {
	return fmt.Errorf("devices: %s: publish %s: %w", id, topic, err)
}

func (s *sender) publishJSON(ctx context.Context, topic string, v any) error {
	b, err := pilotage.AppendJSON(make([]byte, 0, 128), v) // exactly json.Marshal's bytes
	if err != nil {
		return fmt.Errorf("devices: %s: encode: %w", s.id, err)
	}
	return s.publish(ctx, topic, b)
}

// Call validates args against the action's input schema and publishes the
// command (QoS 1). It returns an error wrapping mqtt.ErrNotConnected while
// disconnected, and an error for an unknown or non-callable id.
func (c *Catalog) Call(ctx context.Context, id string, args map[string]any) error {
	a, conn, norm, err := c.prepare(id, args)
	if err != nil {
		return err
	}
	return a.Send(ctx, sender{id: id, conn: conn, http: notifyHTTP, c: c}, norm)
}

// CheckArgs checks args against action id's input schema exactly as Call
// does, publishing nothing (test runs). An id that is not a device action
// is not its to check: nil.
func (c *Catalog) CheckArgs(id string, args map[string]any) error {
	c.mu.RLock()
	known := c.model.actions[id] != nil
	c.mu.RUnlock()
	if !known {
		return nil
	}
	_, _, _, err := c.prepare(id, args)
	return err
}

// prepare finds id's action and checks args against its schema: the
// arguments it publishes are returned.
func (c *Catalog) prepare(id string, args map[string]any) (*action, mqtt.PubSub, map[string]any, error) {
	c.mu.RLock()
	a := c.model.actions[id]
	conn := c.conn
	c.mu.RUnlock()
	if a == nil {
		return nil, nil, nil, fmt.Errorf("devices: unknown action %q", id)
	}
	norm := args
	if !isNormal(args) {
		norm = make(map[string]any, len(args))
		for k, v := range args {
			norm[k] = normalize(v)
		}
	}
	if err := a.Validate(norm); err != nil {
		return nil, nil, nil, err
	}
	if a.Presets {
		norm = model.PublishProps(a.Fields, norm)
	}
	return a, conn, norm, nil
}
