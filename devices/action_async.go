package devices

import (
	"context"
	"fmt"
	"sync"

	"github.com/pilothouse/pilothouse/mqtt"
)

// heldMessage is the last message of a CallAsync, held back by its sender.
type heldMessage struct {
	topic   string
	payload []byte
	ok      bool
}

// Sent is a command CallAsync sent. When it is Pending, its end is told to
// the Acker CallAsync was given (once), and Err turns what that was told
// into what Call would have returned.
type Sent struct {
	id, topic string      // topic "": a webhook notification
	abort     func(error) // nil: not pending
}

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
	if !ok {
		return Sent{}, a.Send(ctx, sender{id: id, conn: conn, http: notifyHTTP, c: c}, norm)
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
