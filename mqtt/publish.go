package mqtt

// The QoS 1 flight of a command: PublishAsync frames and writes it, the
// session gives it a packet id and holds it in flight, and its one end (the
// PUBACK, the connection's loss, the timeout or an abort) goes to its Acker.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

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

// encodePublish frames a PUBLISH (§3.3); for QoS 1 and 2 it also returns
// where its packet identifier is, so that the session can write it in
// once it has claimed one.
func encodePublish(topic string, payload []byte, qos byte, retain bool, id uint16) (pkt []byte, idAt int, err error) {
	if len(topic) > 0xFFFF {
		return nil, 0, fmt.Errorf("mqtt: topic of %d bytes (at most 65535)", len(topic))
	}
	length := 2 + len(topic) + len(payload)
	if qos > 0 {
		length += 2
	}
	if length > maxRemainingLength {
		return nil, 0, fmt.Errorf("mqtt: message of %d bytes (MQTT frames at most %d)", length, maxRemainingLength)
	}
	b0 := byte(publishType<<4) | qos<<1
	if retain {
		b0 |= retainBit
	}
	pkt = appendHeader(make([]byte, 0, 5+length), b0, length)
	pkt = appendString(pkt, topic)
	if qos > 0 {
		idAt = len(pkt)
		pkt = append(pkt, byte(id>>8), byte(id))
	}
	return append(pkt, payload...), idAt, nil
}

// appendHeader appends a fixed header with remaining length length.
func appendHeader(b []byte, b0 byte, length int) []byte {
	b = append(b, b0)
	for {
		d := byte(length & 0x7f)
		length >>= 7
		if length > 0 {
			d |= 0x80
		}
		b = append(b, d)
		if length == 0 {
			return b
		}
	}
}

func appendString(b []byte, s string) []byte {
	return append(append(b, byte(len(s)>>8), byte(len(s))), s...)
}

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

// The states of an asyncPublish: a result that comes while its PUBLISH is
// being written (the write failed and closed the connection, or the
// PUBACK was quicker than the return) waits for the write's end, so that
// done is not called when PublishAsync returns an error.
const (
	publishing int32 = iota
	published
	early
)

// written settles the publish once its write returned with err: a result
// that came during the write is handed to done now, unless the write
// failed (PublishAsync then returns the error, and done is never called).
func (a *asyncPublish) written(err error) error {
	if !a.state.CompareAndSwap(publishing, published) && err == nil {
		a.done.Acked(a.early)
	}
	return err
}

// session is the client's side of the MQTT session (§4.1): the packet
// identifiers in use, the QoS 1 publishes waiting for their PUBACK, the
// SUBSCRIBEs and UNSUBSCRIBEs waiting for their answer, and the QoS 2
// messages received whose PUBREL has not come. It outlives a connection:
// on a persistent session the unacknowledged publishes are sent again
// (with DUP) when the broker still has the session after a reconnect.
type session struct {
	mu         sync.Mutex
	cur        *conn // where packets are written; nil while disconnected
	persistent bool
	next       uint16
	seq        uint64                 // order of claims, for resends
	pending    map[uint16]*waiter     // QoS 1 publishes waiting for their PUBACK
	answers    map[uint16]chan []byte // SUBSCRIBE/UNSUBSCRIBE waiting for their ack
	inbound2   map[uint16]struct{}    // QoS 2 publishes received, PUBREL not yet
	expiry     expiry                 // the waiters' deadlines
}

// waiter is a QoS 1 publish waiting for its PUBACK (QoS 2: its PUBCOMP): to is given the
// result once, unless the connection was lost first (to is then nil: the
// caller was told, and the packet waits to be sent again).
type waiter struct {
	to  *asyncPublish
	due time.Time // when to is given errExpired
	pkt []byte    // the PUBLISH (QoS 2, once received: the PUBREL), for a resend
	seq uint64
}

// claim registers w for a QoS 1 PUBLISH pkt on the current connection,
// writes the claimed identifier into pkt at idAt and returns the
// connection to write it to.
func (s *session) claim(w *waiter, pkt []byte, idAt int) (*conn, uint16, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil, 0, ErrNotConnected
	}
	id, err := s.nextID()
	if err != nil {
		return nil, 0, err
	}
	pkt[idAt], pkt[idAt+1] = byte(id>>8), byte(id)
	if s.pending == nil {
		s.pending = make(map[uint16]*waiter)
	}
	s.seq++
	w.pkt, w.seq = pkt, s.seq
	s.pending[id] = w
	s.expiry.watch(w.due, s.expire)
	return s.cur, id, nil
}

// nextID claims a free packet identifier; s.mu is held.
func (s *session) nextID() (uint16, error) {
	if len(s.pending)+len(s.answers) >= maxInFlight {
		return 0, errTooManyInFlight
	}
	for {
		s.next++
		if s.idFree(s.next) {
			return s.next, nil
		}
	}
}

// idFree reports whether id is unused; s.mu is held.
func (s *session) idFree(id uint16) bool {
	if id == 0 {
		return false
	}
	_, p := s.pending[id]
	_, a := s.answers[id]
	return !p && !a
}

// maxInFlight bounds the packets waiting for the broker's answer
// (publishes, subscribes, unsubscribes): every packet identifier but one.
const maxInFlight = 0xFFFF - 1

// errTooManyInFlight: maxInFlight packets wait for their acknowledgement.
var errTooManyInFlight = errors.New("mqtt: too many publishes waiting for the broker's acknowledgement")

// connection returns the current connection, nil while disconnected.
func (s *session) connection() *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// forget gives up waiting for id's PUBACK (its write failed).
func (s *session) forget(id uint16, w *waiter) {
	s.mu.Lock()
	if s.pending[id] == w {
		delete(s.pending, id)
	}
	s.mu.Unlock()
}

// acked completes the publish waiting for id's PUBACK, if one still
// waits (it may have given up, or its caller heard of a lost connection).
func (s *session) acked(id uint16) {
	s.mu.Lock()
	w, ok := s.pending[id]
	delete(s.pending, id)
	s.mu.Unlock()
	if ok && w.to != nil {
		w.to.result(nil)
	}
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

// lost detaches the connection k: every publish waiting for its PUBACK
// hears errLostUnacked (on a persistent session its packet stays, to be
// sent again), and every SUBSCRIBE or UNSUBSCRIBE hears nothing more.
func (s *session) lost(k *conn) {
	s.mu.Lock()
	if s.cur != k {
		s.mu.Unlock()
		return
	}
	s.cur = nil
	var told []*asyncPublish
	for id, w := range s.pending {
		if w.to != nil {
			told = append(told, w.to)
			w.to = nil
		}
		if !s.persistent {
			delete(s.pending, id)
		}
	}
	for id, ch := range s.answers {
		close(ch)
		delete(s.answers, id)
	}
	s.expiry.stop()
	s.mu.Unlock()
	for _, a := range told {
		a.result(errLostUnacked)
	}
}

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
	var overdue []*asyncPublish
	var next time.Time
	s.mu.Lock()
	for _, w := range s.pending {
		switch {
		case w.to == nil:
		case !w.due.After(now):
			overdue = append(overdue, w.to)
			w.to = nil
		case next.IsZero() || w.due.Before(next):
			next = w.due
		}
	}
	s.expiry.at = time.Time{}
	if !next.IsZero() && s.cur != nil {
		s.expiry.watch(next, s.expire)
	}
	s.mu.Unlock()
	for _, a := range overdue {
		a.result(errExpired)
	}
}

// abort stops waiting for the PUBACK; done gets an error wrapping err,
// unless it already had its result.
func (a *asyncPublish) abort(err error) {
	if a.c.sess.take(a.id, &a.w) {
		a.done.Acked(fmt.Errorf("mqtt: publish %q: %w", a.topic, err))
	}
}

// take removes id's waiter if it is still w and still has its caller, and
// reports whether it was: whoever takes a waiter gives it its one result.
func (s *session) take(id uint16, w *waiter) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending[id] != w || w.to == nil {
		return false
	}
	delete(s.pending, id)
	return true
}

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
