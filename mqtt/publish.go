package mqtt

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// MQTT 3.1.1 packets the connection writes or reads itself (§3.2, §3.4).
const (
	connackHeader = 0x20 // CONNACK, remaining length 2
	pubackHeader  = 0x40 // PUBACK, remaining length 2

	// ownIDBase: the connection numbers its QoS 1 publishes from here to
	// 0xFFFF. paho numbers its packets (SUBSCRIBE, UNSUBSCRIBE, QoS 2
	// PUBLISH) from 1 upwards and would reach this range only after 32,767
	// of them; and their acknowledgements are other packet types
	// (SUBACK, UNSUBACK, PUBREC), so even a shared identifier confuses
	// neither side's matching.
	ownIDBase = 0x8000
	// maxInFlight bounds the QoS 1 publishes waiting for their PUBACK on
	// one connection (every identifier of the range but one).
	maxInFlight = 0xFFFF - ownIDBase

	// maxRemainingLength is the largest packet MQTT can frame (§2.2.3).
	maxRemainingLength = 268_435_455
)

// errTooManyInFlight: maxInFlight publishes wait for their PUBACK.
var errTooManyInFlight = errors.New("mqtt: too many publishes waiting for the broker's acknowledgement")

// outbound is the writing side of a demuxConn: QoS 0 and 1 publishes are
// written by the caller itself, and the PUBACK of a QoS 1 one is matched on
// the connection's reading goroutine.
//
// Through paho a QoS 1 command crossed four goroutines: paho's publish
// redirector and writer on the way out, its reader and comms router for
// the PUBACK, each crossing a thread wake-up. Here a publish is one write
// on the caller's goroutine and one wake-up when its PUBACK arrives.
//
// paho writes each packet with one Write (packets.*Packet.Write); wmu
// makes that Write and ours whole-packet, so both can share the stream.
//
// Our packets do not queue for the socket one by one: while a goroutine
// writes, the others hand it their packets (batch) and return, and it
// writes them all in one write before it lets go. Firings answering a
// burst of events then cost a write syscall per burst, not per command,
// and the broker a read (see writePacket).
type outbound struct {
	wmu sync.Mutex // held by the goroutine writing, for paho's packets and ours

	bmu     sync.Mutex
	writing bool   // a goroutine holds wmu to write our packets: it writes batch too
	batch   []byte // packets handed to that goroutine, whole, in order
	spare   []byte // the array of the batch last written (reused)

	mu      sync.Mutex
	ready   bool // the broker accepted the connection (CONNACK 0)
	failed  bool // the connection is gone: nothing more is written or acknowledged
	next    uint16
	pending map[uint16]*waiter // QoS 1 publishes waiting for their PUBACK
	expiry  expiry             // the asynchronous ones' deadlines
}

// waiter is a QoS 1 publish waiting for its PUBACK: its writer waits on ch
// (Publish), or fn is called with the result (PublishAsync). ch is
// buffered: a result is never blocked on.
type waiter struct {
	ch  chan error
	fn  func(error)
	due time.Time // fn's: when it is given errExpired (zero: ch's writer times itself)
}

// give hands w its result; o.mu must not be held when w.fn is set.
func (w *waiter) give(err error) {
	if w.fn != nil {
		w.fn(err)
	} else {
		w.ch <- err
	}
}

// accepted records the CONNACK's return code: publishes may be written
// from now on if the broker accepted the connection.
func (o *outbound) accepted(code byte) {
	o.mu.Lock()
	o.ready = code == 0 && !o.failed
	o.mu.Unlock()
}

// claim reserves the next free packet identifier for a QoS 1 publish and
// registers w as what its PUBACK (or the connection's loss) is given to.
func (o *outbound) claim(w *waiter) (uint16, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.ready || o.failed {
		return 0, ErrNotConnected
	}
	if len(o.pending) >= maxInFlight {
		return 0, errTooManyInFlight
	}
	if o.pending == nil {
		o.pending = make(map[uint16]*waiter)
	}
	for {
		o.next++
		if o.next < ownIDBase {
			o.next = ownIDBase
		}
		if _, busy := o.pending[o.next]; !busy {
			break
		}
	}
	o.pending[o.next] = w
	if w.fn != nil {
		o.expiry.watch(w.due, o.expire)
	}
	return o.next, nil
}

// forget gives up waiting for id's PUBACK (timed out, cancelled, or the
// write failed); a late one is then ignored, unless id was claimed again
// by then (32,768 publishes later): it would complete that publish.
func (o *outbound) forget(id uint16) {
	o.mu.Lock()
	delete(o.pending, id)
	o.mu.Unlock()
}

// take removes id's waiter if it is still w, and reports whether it was:
// whoever takes a waiter gives it its one result.
func (o *outbound) take(id uint16, w *waiter) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pending[id] != w {
		return false
	}
	delete(o.pending, id)
	return true
}

// acked completes the publish waiting for id's PUBACK, if one still
// waits (it may have given up).
func (o *outbound) acked(id uint16) {
	o.mu.Lock()
	w, ok := o.pending[id]
	delete(o.pending, id)
	o.mu.Unlock()
	if ok {
		w.give(nil)
	}
}

// fail ends the connection's outbound side: every waiting publish gets
// errLostUnacked (it may or may not have reached the broker) and no more
// are written.
func (o *outbound) fail() {
	o.mu.Lock()
	o.failed, o.ready = true, false
	gone := make([]*waiter, 0, len(o.pending))
	for id, w := range o.pending {
		gone = append(gone, w)
		delete(o.pending, id)
	}
	o.expiry.stop()
	o.mu.Unlock()
	for _, w := range gone {
		w.give(errLostUnacked)
	}
}

// writable reports whether publishes may be written now.
func (o *outbound) writable() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.ready && !o.failed
}

// Write writes one of paho's packets whole (see outbound).
func (c *demuxConn) Write(p []byte) (int, error) {
	c.out.wmu.Lock()
	defer c.out.wmu.Unlock()
	return c.Conn.Write(p)
}

// Close closes the connection and fails the publishes waiting on it.
func (c *demuxConn) Close() error {
	c.out.fail()
	return c.Conn.Close()
}

// publish writes a QoS 0 or 1 PUBLISH. For QoS 1, w is given its PUBACK
// and the packet identifier is returned (the caller must forget it if it
// stops waiting).
func (c *demuxConn) publish(topic string, payload []byte, qos byte, retain bool, w *waiter) (uint16, error) {
	if len(topic) > 0xFFFF {
		return 0, fmt.Errorf("mqtt: topic of %d bytes (at most 65535)", len(topic))
	}
	length := 2 + len(topic) + len(payload)
	if qos == 1 {
		length += 2
	}
	if length > maxRemainingLength {
		return 0, fmt.Errorf("mqtt: message of %d bytes (MQTT frames at most %d)", length, maxRemainingLength)
	}
	var id uint16
	if qos == 1 {
		var err error
		if id, err = c.out.claim(w); err != nil {
			return 0, err
		}
	} else if !c.out.writable() {
		return 0, ErrNotConnected
	}
	if err := c.writePacket(encodePublish(topic, payload, qos, retain, id, length)); err != nil {
		c.out.forget(id)
		return 0, err
	}
	return id, nil
}

// maxBatch bounds the packets handed to a writing goroutine: past it, a
// writer waits for the socket as paho's packets do.
const maxBatch = 256 << 10

// writePacket writes one whole packet of ours, or hands it to the
// goroutine writing now, which writes it before it returns: either way it
// reaches the socket after every packet this goroutine wrote before. A
// write that fails leaves the stream cut mid-packet, so it closes the
// connection (paho then reconnects): the QoS 1 publishes it carried hear
// errLostUnacked, and the QoS 0 ones handed over are lost with the
// connection.
func (c *demuxConn) writePacket(pkt []byte) error {
	o := &c.out
	o.bmu.Lock()
	if o.writing && len(o.batch)+len(pkt) <= maxBatch {
		o.batch = append(o.batch, pkt...)
		o.bmu.Unlock()
		return nil
	}
	o.bmu.Unlock()
	o.wmu.Lock()
	defer o.wmu.Unlock()
	o.bmu.Lock()
	o.writing = true
	o.bmu.Unlock()
	_, err := c.Conn.Write(pkt)
	for err == nil {
		o.bmu.Lock()
		b := o.batch
		if len(b) == 0 {
			o.writing = false
			o.bmu.Unlock()
			return nil
		}
		o.batch = o.spare[:0]
		o.bmu.Unlock()
		_, err = c.Conn.Write(b)
		o.spare = b // only the goroutine holding wmu touches spare
	}
	o.bmu.Lock()
	o.writing, o.batch = false, nil
	o.bmu.Unlock()
	_ = c.Close()
	return err
}

// encodePublish frames a PUBLISH (§3.3) whose remaining length is length.
func encodePublish(topic string, payload []byte, qos byte, retain bool, id uint16, length int) []byte {
	b0 := byte(publishType<<4) | qos<<1
	if retain {
		b0 |= retainBit
	}
	pkt := make([]byte, 0, 5+length)
	pkt = append(pkt, b0)
	for {
		d := byte(length & 0x7f)
		length >>= 7
		if length > 0 {
			d |= 0x80
		}
		pkt = append(pkt, d)
		if length == 0 {
			break
		}
	}
	pkt = append(pkt, byte(len(topic)>>8), byte(len(topic)))
	pkt = append(pkt, topic...)
	if qos == 1 {
		pkt = append(pkt, byte(id>>8), byte(id))
	}
	return append(pkt, payload...)
}

// Publish sends one message and waits for it to be written (QoS 0) or
// acknowledged (QoS 1, 2), at most PublishTimeout and never past ctx. While
// disconnected it returns ErrNotConnected at once (nothing was sent). A
// message written that gets no acknowledgement fails with an error
// wrapping ErrNotAcknowledged (it may still arrive): if the connection
// drops while waiting (wrapping ErrNotConnected too), or the broker does
// not answer in time (frozen, overloaded; wrapping
// context.DeadlineExceeded), and Health then reports the broker as not
// answering until it answers again.
//
// QoS 0 and 1 messages are written on the caller's goroutine (see
// outbound), QoS 2 ones by paho. Either write waits while the socket is
// full, bounded by PublishTimeout (the connection's write deadline), during
// which ctx is not looked at.
func (c *Client) Publish(ctx context.Context, topic string, payload []byte, qos byte, retain bool) error {
	if err := checkPublish(topic, qos, 2); err != nil {
		return err
	}
	down, ok := c.connection()
	if !ok {
		return ErrNotConnected
	}
	if qos < 2 {
		return c.publishWait(ctx, topic, payload, qos, retain)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("mqtt: publish %q: %w", topic, err)
	}
	return c.publishPaho(ctx, down, topic, payload, retain)
}

// publishWait is PublishAsync and a wait for its end; ctx's end aborts it.
func (c *Client) publishWait(ctx context.Context, topic string, payload []byte, qos byte, retain bool) error {
	ack := make(chan error, 1)
	abort, err := c.PublishAsync(ctx, topic, payload, qos, retain, func(err error) { ack <- err })
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

// publishPaho publishes a QoS 2 message through paho, waiting for its
// token at most until PublishTimeout and never past ctx or the
// connection's loss (down). A token done as the connection goes still
// counts.
func (c *Client) publishPaho(ctx context.Context, down <-chan struct{}, topic string, payload []byte, retain bool) error {
	const qos = 2
	start := time.Now()
	tok := c.pc.Publish(topic, qos, retain, payload)
	t := time.NewTimer(c.opts.PublishTimeout)
	defer t.Stop()
	select {
	case <-tok.Done():
	case <-down:
		select {
		case <-tok.Done():
		default:
			return errLostUnacked // paho may have written it
		}
	case <-ctx.Done():
		return fmt.Errorf("mqtt: publish %q: %w", topic, ctx.Err())
	case <-t.C:
		return c.publishTimedOut(start, topic, qos)
	}
	if err := tok.Error(); err != nil {
		if time.Since(start) >= c.opts.PublishTimeout && strings.Contains(err.Error(), "timeout") {
			return c.publishTimedOut(start, topic, qos) // paho gave up taking it
		}
		return c.publishFailed(start, topic, err)
	}
	return nil
}
