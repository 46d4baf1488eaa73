package devices

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/pilotage"
)

// A call of an action, from its arguments to its command on the bus: Call
// and CallAsync, prepare (the action and its checked arguments), the
// sender that collects the messages an action's Send makes, publish, which
// sends them, and Sent, the pending end of CallAsync's last command.

// Sent is a command CallAsync sent. When it is Pending, its end is told to
// the Acker CallAsync was given (once), and Err turns what that was told
// into what Call would have returned.
type Sent struct {
	id, topic string      // topic "": a webhook notification
	abort     func(error) // nil: not pending
	off       offline
}

// offline is the action's device when its availability said offline as
// the command was sent (dev ""), and when it was last heard from.
type offline struct {
	dev  string
	seen time.Time
}

// Offline reports whether the device of the command's action was offline
// (its availability said so) as the command was sent: the command was
// published, but the device may not get it. dev is the device's id;
// lastHeard is when it last sent anything (zero: not since the start).
func (s Sent) Offline() (dev string, lastHeard time.Time, ok bool) {
	return s.off.dev, s.off.seen, s.off.dev != ""
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
	a, conn, off, norm, err := c.prepareSend(id, args)
	if err != nil {
		return Sent{}, err
	}
	s := &sender{id: id, c: c}
	if a.OffBus {
		return Sent{id: id, abort: sendOffBus(ctx, a, s, norm, ack), off: off}, nil
	}
	err = a.Send(ctx, s, norm)
	ap, async := conn.(mqtt.AsyncPublisher)
	n := len(s.msgs)
	if err != nil || !async || n == 0 { // as Call: a failed Send, the embedded broker's client, or nothing to send
		topic, err := publish(ctx, id, conn, s.msgs, err)
		return Sent{id: id, topic: topic, off: off}, err
	}
	if _, err := publish(ctx, id, conn, s.msgs[:n-1], nil); err != nil {
		return Sent{}, err
	}
	last := s.msgs[n-1]
	abort, err := ap.PublishAsync(ctx, last.topic, last.payload, 1, false, ack)
	if err != nil {
		return Sent{}, publishError(id, last.topic, err)
	}
	return Sent{id: id, topic: last.topic, abort: abort, off: off}, nil
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
	sent, err := c.CallSent(ctx, id, args)
	return sent.topic, err
}

// CallSent is Call that says what it sent: the topic of the last message
// it published, and whether the action's device was offline (never
// Pending).
func (c *Catalog) CallSent(ctx context.Context, id string, args map[string]any) (Sent, error) {
	a, conn, off, norm, err := c.prepareSend(id, args)
	if err != nil {
		return Sent{}, err
	}
	s := &sender{id: id, c: c}
	err = a.Send(ctx, s, norm)
	topic, err := publish(ctx, id, conn, s.msgs, err)
	return Sent{id: id, topic: topic, off: off}, err
}

// publish publishes the messages an action's Send made, in order, each
// acknowledged before the next, then returns failed, the error Send
// returned after making them: a call publishes what came before its
// failure. topic is the last message's that was published.
func publish(ctx context.Context, id string, conn mqtt.PubSub, msgs []outMsg, failed error) (topic string, err error) {
	for _, m := range msgs {
		if conn == nil {
			return topic, fmt.Errorf("devices: %s: %w", id, mqtt.ErrNotConnected)
		}
		if err := conn.Publish(ctx, m.topic, m.payload, 1, false); err != nil {
			return topic, publishError(id, m.topic, err)
		}
		topic = m.topic
	}
	return topic, failed
}

// prepare finds id's action and checks args against its schema: the
// arguments it publishes are returned.
func (c *Catalog) prepare(id string, args map[string]any) (*action, mqtt.PubSub, map[string]any, error) {
	a, conn, _, norm, err := c.prepareSend(id, args)
	return a, conn, norm, err
}

// prepareSend is prepare that also says whether the action's device is
// offline. That is read under the read lock prepare takes anyway, in the
// maps it holds: no other lock on a firing's path, no allocation.
func (c *Catalog) prepareSend(id string, args map[string]any) (*action, mqtt.PubSub, offline, map[string]any, error) {
	var off offline
	c.mu.RLock()
	a := c.model.actions[id]
	conn := c.conn
	if dev := c.model.devOf[id]; dev != "" {
		if d := c.devLive[dev]; d != nil && d.offline() {
			off = offline{dev: dev, seen: d.lastSeen}
		}
	}
	c.mu.RUnlock()
	if a == nil {
		return nil, nil, off, nil, fmt.Errorf("devices: unknown action %q", id)
	}
	norm := args
	if !isNormal(args) {
		norm = make(map[string]any, len(args))
		for k, v := range args {
			norm[k] = normalize(v)
		}
	}
	if err := a.Validate(norm); err != nil {
		return nil, nil, off, nil, err
	}
	if a.Presets {
		norm = model.PublishProps(a.Fields, norm)
	}
	return a, conn, off, norm, nil
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

// sender is the model.Sender an action's Send is given: it collects the
// call's messages, which its caller then publishes (Call, CallAsync) or
// lists (Preview). The catalog's own actions do their own work when it is
// not dry: a local action's Run, a webhook's POST (notifyHTTP).
type sender struct {
	id string
	// c reads the live state a command depends on (a light turned on
	// at its last brightness).
	c    *Catalog
	dry  bool // Preview: nothing is done, the messages are only listed
	msgs []outMsg
	one  [1]outMsg // msgs' first array: most commands are one message
}

// outMsg is one message of a call: an MQTT publish (QoS 1, not retained)
// of payload on topic or, listed by Preview only, a webhook's POST to url.
type outMsg struct {
	topic, url string
	payload    []byte
}

// AddJSON adds v, encoded as json.Marshal does, on topic.
func (s *sender) AddJSON(topic string, v any) error {
	b, err := pilotage.AppendJSON(make([]byte, 0, 128), v) // exactly json.Marshal's bytes
	if err != nil {
		return fmt.Errorf("devices: %s: encode: %w", s.id, err)
	}
	s.Add(topic, b)
	return nil
}

// Add adds payload on topic as the call's next message.
func (s *sender) Add(topic string, payload []byte) {
	if s.msgs == nil {
		s.msgs = s.one[:0]
	}
	s.msgs = append(s.msgs, outMsg{topic: topic, payload: payload})
}

// publishError is the error of a publish to topic of action id's call.
func publishError(id, topic string, err error) error {
	return fmt.Errorf("devices: %s: publish %s: %w", id, topic, err)
}

// ID is the action's id.
func (s *sender) ID() string { return s.id }

// Value is the live value of state id (nil when unknown).
func (s *sender) Value(id string) any {
	l, _ := s.c.Live(id)
	return l.Value
}

// own adapts a send function of the catalog's own actions (notification
// channels, local devices), which use what only the catalog's sender has:
// whether it is dry (Preview), and its list of messages.
func own(send func(ctx context.Context, p *sender, args map[string]any) error) func(context.Context, model.Sender, map[string]any) error {
	return func(ctx context.Context, p model.Sender, args map[string]any) error {
		return send(ctx, p.(*sender), args)
	}
}

// sendOffBus sends an HTTP notification on its own goroutine: its attempts
// (up to about 20 s) must not hold the caller, which may be the
// connection's reader. abort cancels it and ends the wait at once.
func sendOffBus(ctx context.Context, a *action, s *sender, args map[string]any, ack mqtt.Acker) (abort func(error)) {
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
