package mqtt

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// errExpired is what an asynchronous publish's waiter is given when its due
// time passed before its PUBACK came.
var errExpired = errors.New("mqtt: acknowledgement overdue")

// expiry is the one timer behind the due times of a connection's
// asynchronous publishes: armed for the earliest one, it gives every
// overdue waiter errExpired and re-arms for the next. A publish answered in
// time costs no timer of its own. Guarded by the session's mu.
type expiry struct {
	t  *time.Timer
	at time.Time // what t is armed for; zero: not armed
}

// watch makes sure the timer goes off by due.
func (x *expiry) watch(due time.Time, expire func()) {
	switch {
	case x.t == nil:
		x.t = time.AfterFunc(time.Until(due), expire)
	case x.at.IsZero() || due.Before(x.at):
		x.t.Reset(time.Until(due))
	default:
		return
	}
	x.at = due
}

func (x *expiry) stop() {
	if x.t != nil {
		x.t.Stop()
	}
	x.at = time.Time{}
}

// expire gives the overdue publishes errExpired (their packets stay in
// flight: the broker may still answer) and re-arms the timer for the
// earliest one left.
func (s *session) expire() {
	now := time.Now()
	var overdue []func(error)
	var next time.Time
	s.mu.Lock()
	for _, w := range s.pending {
		switch {
		case w.fn == nil:
		case !w.due.After(now):
			overdue = append(overdue, w.fn)
			w.fn = nil
		case next.IsZero() || w.due.Before(next):
			next = w.due
		}
	}
	s.expiry.at = time.Time{}
	if !next.IsZero() && s.cur != nil {
		s.expiry.watch(next, s.expire)
	}
	s.mu.Unlock()
	for _, fn := range overdue {
		fn(errExpired)
	}
}

// PublishAsync writes one message (QoS 0 or 1) on the caller's goroutine
// and returns once it is written; done is then called once with what
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
func (c *Client) PublishAsync(ctx context.Context, topic string, payload []byte, qos byte, retain bool, done func(error)) (abort func(error), err error) {
	if err := checkPublish(topic, qos, 1); err != nil {
		return nil, err
	}
	return c.publishAsync(ctx, topic, payload, qos, retain, done)
}

// publishAsync is PublishAsync at any QoS (Publish waits on it).
func (c *Client) publishAsync(ctx context.Context, topic string, payload []byte, qos byte, retain bool, done func(error)) (abort func(error), err error) {
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
		done(nil)
		return func(error) {}, nil
	}
	deadline, _ := ctx.Deadline()
	a := &asyncPublish{c: c, topic: topic, qos: qos, start: start, done: done, byDeadline: !deadline.IsZero() && deadline.Before(start.Add(c.opts.PublishTimeout))}
	a.w = waiter{fn: a.result, due: start.Add(c.opts.PublishTimeout)}
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
		a.done(a.early)
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
	done       func(error)
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
	a.done(err)
}

// abort stops waiting for the PUBACK; done gets an error wrapping err,
// unless it already had its result.
func (a *asyncPublish) abort(err error) {
	if a.c.sess.take(a.id, &a.w) {
		a.done(fmt.Errorf("mqtt: publish %q: %w", a.topic, err))
	}
}
