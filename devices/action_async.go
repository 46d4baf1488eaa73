package devices

import (
	"context"
	"fmt"
	"sync"
)

// asyncPublisher is a connection whose QoS 1 publishes can be acknowledged
// after they return (mqtt.Client; the embedded broker's Inline client
// publishes synchronously, with nothing to wait for).
type asyncPublisher interface {
	PublishAsync(ctx context.Context, topic string, payload []byte, qos byte, retain bool, done func(error)) (abort func(error), err error)
}

// heldMessage is the last message of a CallAsync, held back by its sender.
type heldMessage struct {
	topic   string
	payload []byte
	ok      bool
}

// CallAsync is Call whose last command need not be waited for: it
// returns once that command is written, and done is called once with what
// Call would have returned, when the broker acknowledges it (or the
// connection is lost, or it is overdue at ctx's deadline or the publish
// timeout; see mqtt.Client.PublishAsync); abort ends the wait with an error
// wrapping its argument. Every earlier message of the call is published
// and acknowledged first, as Call does. When CallAsync returns an error,
// done is never called; done may be called before CallAsync returns, and
// on another goroutine (the connection's reader): it must not block.
func (c *Catalog) CallAsync(ctx context.Context, id string, args map[string]any, done func(error)) (abort func(error), err error) {
	a, conn, norm, err := c.prepare(id, args)
	if err != nil {
		return nil, err
	}
	if a.OffBus {
		return sendOffBus(ctx, a, sender{id: id, conn: conn, http: notifyHTTP}, norm, done), nil
	}
	ap, ok := conn.(asyncPublisher)
	if !ok {
		if err := a.Send(ctx, sender{id: id, conn: conn, http: notifyHTTP, c: c}, norm); err != nil {
			return nil, err
		}
		done(nil)
		return noAbort, nil
	}
	s := sender{id: id, conn: conn, http: notifyHTTP, held: &heldMessage{}, c: c}
	err = a.Send(ctx, s, norm)
	last := *s.held
	if err != nil {
		if last.ok { // what Call would have published before failing
			s.held = nil
			_ = s.publish(ctx, last.topic, last.payload)
		}
		return nil, err
	}
	if !last.ok { // nothing published (a webhook notification)
		done(nil)
		return noAbort, nil
	}
	abort, err = ap.PublishAsync(ctx, last.topic, last.payload, 1, false, func(err error) {
		if err != nil {
			err = s.publishError(last.topic, err)
		}
		done(err)
	})
	if err != nil {
		return nil, s.publishError(last.topic, err)
	}
	return abort, nil
}

func noAbort(error) {}

// sendOffBus sends an HTTP notification on its own goroutine: its attempts
// (up to about 20 s) must not hold the caller, which may be the
// connection's reader. abort cancels it and ends the wait at once.
func sendOffBus(ctx context.Context, a *action, s sender, args map[string]any, done func(error)) (abort func(error)) {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	var once sync.Once
	finish := func(err error) { once.Do(func() { done(err) }) }
	go func() {
		finish(a.Send(ctx, s, args))
		cancel(nil)
	}()
	return func(err error) {
		cancel(err)
		finish(fmt.Errorf("devices: %s: %w", s.id, err))
	}
}
