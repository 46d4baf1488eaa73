package mqtt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
)

// Publish sends one message and waits for it to be written (QoS 0) or
// acknowledged (QoS 1: PUBACK, QoS 2: PUBCOMP), at most PublishTimeout and never past ctx. While
// disconnected it returns ErrNotConnected at once (nothing was sent). A
// message written that gets no acknowledgement fails with an error
// wrapping ErrNotAcknowledged (it may still arrive): if the connection
// drops while waiting (wrapping ErrNotConnected too), or the broker does
// not answer in time (frozen, overloaded; wrapping
// context.DeadlineExceeded), and Health then reports the broker as not
// answering until it answers again.
//
// The message is written on the caller's goroutine (see writer), waiting
// while the socket is full, bounded by PublishTimeout (the connection's
// write deadline), during which ctx is not looked at.
func (c *Client) Publish(ctx context.Context, topic string, payload []byte, qos byte, retain bool) error {
	if err := checkPublish(topic, qos, 2); err != nil {
		return err
	}
	ack := make(ackChan, 1)
	abort, err := c.publishAsync(ctx, topic, payload, qos, retain, ack)
	if err != nil {
		return err
	}
	select {
	case err := <-ack:
		return err
	case <-ctx.Done():
		abort(ctx.Err())
		return <-ack // the abort's error, or the result that came first
	}
}

// ackChan is Publish's Acker: the result, for Publish to wait on.
type ackChan chan error

func (a ackChan) Acked(err error) { a <- err }

// checkPublish refuses a topic no PUBLISH may carry and a QoS over max.
func checkPublish(topic string, qos, max byte) error {
	if topic == "" || strings.ContainsAny(topic, "+#\x00") {
		return fmt.Errorf("mqtt: publish: invalid topic %q", topic)
	}
	if qos > max {
		return fmt.Errorf("mqtt: publish %q: invalid qos %d (at most %d here)", topic, qos, max)
	}
	return nil
}

// Acker hears once how a publish ended (PublishAsync): the engine's firing
// is one, handed down unchanged through devices, so an acknowledgement
// crosses one boundary on its way back.
type Acker interface {
	Acked(err error)
}

// AsyncPublisher is a connection whose QoS 1 publishes can be acknowledged
// after they return (Client; the embedded broker's Inline client publishes
// synchronously, with nothing to wait for). Wrappers of a Client keep it
// by this one name, so that the signature cannot drift from the Client's.
type AsyncPublisher interface {
	PublishAsync(ctx context.Context, topic string, payload []byte, qos byte, retain bool, done Acker) (abort func(error), err error)
}

var _ AsyncPublisher = (*Client)(nil)

// AckFunc is a func as an Acker.
type AckFunc func(error)

// Acked calls f(err).
func (f AckFunc) Acked(err error) { f(err) }

// PublishAsync writes one message (QoS 0 or 1) on the caller's goroutine
// and returns once it is written; done.Acked is then called once with what
// Publish would have returned: at once for QoS 0; for QoS 1 when its
// PUBACK arrives (nil), when the connection is lost (an error wrapping
// ErrNotAcknowledged and ErrNotConnected), PublishTimeout after the write
// (wrapping ErrNotAcknowledged and context.DeadlineExceeded) or at ctx's
// deadline if that is earlier (wrapping context.DeadlineExceeded), or
// when abort is called with err (an error wrapping err). ctx's
// cancellation is not watched: its owner calls abort. done runs on the
// connection's reading goroutine, a timer's or abort's caller: it must not
// block. When PublishAsync returns an error, done is never called.
//
// It is what Publish waits on, without a goroutine waiting for each
// acknowledgement (a park and a wake-up per command) and without a timer
// per publish.
func (c *Client) PublishAsync(ctx context.Context, topic string, payload []byte, qos byte, retain bool, done Acker) (abort func(error), err error) {
	if err := checkPublish(topic, qos, 1); err != nil {
		return nil, err
	}
	return c.publishAsync(ctx, topic, payload, qos, retain, done)
}

// publishAsync is PublishAsync at any QoS (Publish waits on it).
func (c *Client) publishAsync(ctx context.Context, topic string, payload []byte, qos byte, retain bool, done Acker) (abort func(error), err error) {
	if !c.Connected() {
		return nil, ErrNotConnected
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("mqtt: publish %q: %w", topic, err)
	}
	pkt, idAt, err := encodePublish(topic, payload, qos, retain, 0)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if qos == 0 {
		k := c.sess.connection()
		if k == nil {
			return nil, ErrNotConnected
		}
		if err := k.writePacket(pkt); err != nil {
			return nil, c.publishFailed(start, topic, err)
		}
		done.Acked(nil)
		return func(error) {}, nil
	}
	deadline, _ := ctx.Deadline()
	a := &asyncPublish{c: c, topic: topic, qos: qos, start: start, done: done, byDeadline: !deadline.IsZero() && deadline.Before(start.Add(c.opts.PublishTimeout))}
	a.w = waiter{to: a, due: start.Add(c.opts.PublishTimeout)}
	if a.byDeadline {
		a.w.due = deadline
	}
	k, id, err := c.sess.claim(&a.w, pkt, idAt)
	if err != nil {
		return nil, err
	}
	a.id = id
	if err = k.writePacket(pkt); err != nil {
		c.sess.forget(id, &a.w)
	}
	if err := a.written(err); err != nil {
		return nil, c.publishFailed(start, topic, err)
	}
	return a.abort, nil
}

// written settles the publish once its write returned with err: a result
// that came during the write is handed to done now, unless the write
// failed (PublishAsync then returns the error, and done is never called).
func (a *asyncPublish) written(err error) error {
	if !a.state.CompareAndSwap(publishing, published) && err == nil {
		a.done.Acked(a.early)
	}
	return err
}

// The states of an asyncPublish: a result that comes while its PUBLISH is
// being written (the write failed and closed the connection, or the
// PUBACK was quicker than the return) waits for the write's end, so that
// done is not called when PublishAsync returns an error.
const (
	publishing int32 = iota
	published
	early
)

// asyncPublish is one PublishAsync waiting for its PUBACK, in one
// allocation with its waiter.
type asyncPublish struct {
	c          *Client
	topic      string
	qos        byte
	start      time.Time
	done       Acker
	byDeadline bool   // the caller's deadline is earlier than PublishTimeout
	w          waiter // given one result by whoever removes it from the pending map

	id    uint16
	state atomic.Int32
	early error // the result that came while publishing
}

// result translates what the waiter was given into Publish's error.
func (a *asyncPublish) result(err error) {
	switch {
	case errors.Is(err, errExpired) && a.byDeadline:
		err = fmt.Errorf("mqtt: publish %q: %w", a.topic, context.DeadlineExceeded)
	case errors.Is(err, errExpired):
		err = a.c.publishTimedOut(a.start, a.topic, a.qos)
	}
	a.early = err
	if a.state.CompareAndSwap(publishing, early) {
		return
	}
	a.done.Acked(err)
}

// abort stops waiting for the PUBACK; done gets an error wrapping err,
// unless it already had its result.
func (a *asyncPublish) abort(err error) {
	if a.c.sess.take(a.id, &a.w) {
		a.done.Acked(fmt.Errorf("mqtt: publish %q: %w", a.topic, err))
	}
}
