package devices

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/pilotage"
)

// A call of an action, from its arguments to its command on the bus: Call
// and CallAsync, prepare (the action and its checked arguments), the
// sender that publishes the call's messages, and Sent, the pending end of
// CallAsync's last command.

// Sent is a command CallAsync sent. When it is Pending, its end is told to
// the Acker CallAsync was given (once), and Err turns what that was told
// into what Call would have returned.
type Sent struct {
	id, topic string      // topic "": a webhook notification
	abort     func(error) // nil: not pending
}

// Topic is the topic of the command's last message ("" for a webhook).
func (s Sent) Topic() string { return s.topic }

// Pending reports whether the command's end is still to be told to the
// Acker; if not, the command is over and succeeded.
func (s Sent) Pending() bool { return s.abort != nil }

// Abort ends the wait of a pending command: the Acker is told an error
// wrapping err, unless it already heard its end.
func (s Sent) Abort(err error) { s.abort(err) }

// Err is the error Call would have returned for a command whose Acker was
// told err (nil: nil).
func (s Sent) Err(err error) error {
	if err == nil || s.topic == "" {
		return err
	}
	return publishError(s.id, s.topic, err)
}

// CallAsync is Call whose last command need not be waited for: it returns
// once that command is written and, when the result is Pending, ack is
// told once how it ended (nil when the broker acknowledges it; else the
// connection's loss, ctx's deadline or the publish timeout: see
// mqtt.Client.PublishAsync, and Sent.Err for Call's error). Every earlier
// message of the call is published and acknowledged first, as Call does.
// When CallAsync returns an error or a result that is not pending, ack is
// never told anything. ack may be told before CallAsync returns, and on
// another goroutine (the connection's reader): it must not block.
func (c *Catalog) CallAsync(ctx context.Context, id string, args map[string]any, ack mqtt.Acker) (Sent, error) {
	a, conn, norm, err := c.prepare(id, args)
	if err != nil {
		return Sent{}, err
	}
	if a.OffBus {
		return Sent{id: id, abort: sendOffBus(ctx, a, sender{id: id, conn: conn, http: notifyHTTP}, norm, ack)}, nil
	}
	ap, ok := conn.(mqtt.AsyncPublisher)
	if !ok { // the embedded broker's client: published when Send returns
		var topic string
		err := a.Send(ctx, sender{id: id, conn: conn, http: notifyHTTP, c: c, sent: &topic}, norm)
		return Sent{id: id, topic: topic}, err
	}
	s := sender{id: id, conn: conn, http: notifyHTTP, held: &heldMessage{}, c: c}
	err = a.Send(ctx, s, norm)
	last := *s.held
	if err != nil {
		if last.ok { // what Call would have published before failing
			s.held = nil
			_ = s.publish(ctx, last.topic, last.payload)
		}
		return Sent{}, err
	}
	if !last.ok { // nothing published
		return Sent{}, nil
	}
	abort, err := ap.PublishAsync(ctx, last.topic, last.payload, 1, false, ack)
	if err != nil {
		return Sent{}, publishError(id, last.topic, err)
	}
	return Sent{id: id, topic: last.topic, abort: abort}, nil
}

// Call validates args against the action's input schema and publishes the
// command (QoS 1). It returns an error wrapping mqtt.ErrNotConnected while
// disconnected, and an error for an unknown or non-callable id.
func (c *Catalog) Call(ctx context.Context, id string, args map[string]any) error {
	_, err := c.CallTopic(ctx, id, args)
	return err
}

// CallTopic is Call that also says the topic of the last message it
// published ("" for none, or a webhook).
func (c *Catalog) CallTopic(ctx context.Context, id string, args map[string]any) (string, error) {
	a, conn, norm, err := c.prepare(id, args)
	if err != nil {
		return "", err
	}
	var topic string
	err = a.Send(ctx, sender{id: id, conn: conn, http: notifyHTTP, c: c, sent: &topic}, norm)
	return topic, err
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

// sender publishes the messages of one Call; it is the model.Sender an
// action's Send is given. With held set (CallAsync), the last message is
// held back for its caller to publish; every earlier one is published,
// and acknowledged, before the next is.
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
	// sent, when set (Call), is told each published message's topic.
	sent *string
}

// heldMessage is the last message of a CallAsync, held back by its sender.
type heldMessage struct {
	topic   string
	payload []byte
	ok      bool
}

// PublishJSON publishes v, encoded as json.Marshal does, on topic.
func (s sender) PublishJSON(ctx context.Context, topic string, v any) error {
	b, err := pilotage.AppendJSON(make([]byte, 0, 128), v) // exactly json.Marshal's bytes
	if err != nil {
		return fmt.Errorf("devices: %s: encode: %w", s.id, err)
	}
	return s.publish(ctx, topic, b)
}

// Publish publishes payload on topic as the call's next message.
func (s sender) Publish(ctx context.Context, topic string, payload []byte) error {
	return s.publish(ctx, topic, payload)
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
	if s.sent != nil {
		*s.sent = topic
	}
	return nil
}

// publishError is the error of a publish to topic of action id's call.
func publishError(id, topic string, err error) error {
	return fmt.Errorf("devices: %s: publish %s: %w", id, topic, err)
}

// ID is the action's id.
func (s sender) ID() string { return s.id }

// Value is the live value of state id (nil when unknown).
func (s sender) Value(id string) any {
	if s.c == nil {
		return nil
	}
	l, _ := s.c.Live(id)
	return l.Value
}

// own adapts a send function of the catalog's own actions (notification
// channels, local devices), which use what only the catalog's sender has:
// its HTTP client and Preview's record.
func own(send func(ctx context.Context, p sender, args map[string]any) error) func(context.Context, model.Sender, map[string]any) error {
	return func(ctx context.Context, p model.Sender, args map[string]any) error {
		return send(ctx, p.(sender), args)
	}
}

// sendOffBus sends an HTTP notification on its own goroutine: its attempts
// (up to about 20 s) must not hold the caller, which may be the
// connection's reader. abort cancels it and ends the wait at once.
func sendOffBus(ctx context.Context, a *action, s sender, args map[string]any, ack mqtt.Acker) (abort func(error)) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	var once sync.Once
	finish := func(err error) { once.Do(func() { ack.Acked(err) }) }
	go func() {
		finish(a.Send(ctx, s, args))
		cancel(nil)
	}()
	return func(err error) {
		cancel(err)
		finish(fmt.Errorf("devices: %s: %w", s.id, err))
	}
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
