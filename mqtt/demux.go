package mqtt

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
)

// readBuffer is the size of a connection's read buffer: one syscall reads
// many small packets when the broker sends a burst.
const readBuffer = 32 << 10

// preallocMax: a QoS 0 PUBLISH body up to this size is read into a buffer
// of its size at once.
const preallocMax = 64 << 10

// MQTT 3.1.1 fixed header (§2.2): the packet type in the high nibble; for
// PUBLISH, QoS in bits 2-1 and RETAIN in bit 0.
const (
	publishType = 3
	qosBits     = 0x06
	retainBit   = 0x01
)

// demuxConn reads the broker's packets through a buffer and delivers each
// QoS 0 and 1 PUBLISH itself, on the connection's reading goroutine
// (acknowledging the QoS 1 ones), and takes the PUBACKs of its own
// publishes (see outbound); paho reads every other packet (CONNACK,
// SUBACK, QoS 2 publishes and their flow, PINGRESP) as it arrived.
//
// paho hands a received PUBLISH through four goroutines (its reader, its
// incoming comms, the comms multiplexer, its router) before calling the
// handler: four thread wake-ups per event (docs/architecture.md,
// "Connection ownership", has the figures). A QoS 0 or 1 PUBLISH needs
// nothing from paho (no store; a PUBACK at most), so it is delivered from here,
// to the same deliver (the client's subscription table and queues, so the
// backpressure is the same: a full queue holds the reading goroutine, and
// the broker). Ordering is kept per QoS level, as MQTT requires (§4.6).
//
// The buffer also spares paho its byte-at-a-time reads of each fixed
// header: behind it, a burst of packets costs one read syscall.
type demuxConn struct {
	net.Conn
	r      *bufio.Reader
	in     inbound
	head   [5]byte // the fixed header of the packet paho is reading
	hn, hi int     // its length and what paho has read of it
	rest   int     // bytes of that packet's body paho has yet to read
	// buffered is what the read buffer held when the last packet was
	// handled (Client.Unread, from another goroutine): the packet being
	// handled now counts as unread.
	buffered atomic.Int64
	dead     atomic.Bool // a read failed: nothing waits in it any more
	out      outbound    // QoS 0 and 1 publishes written by the caller
}

// inbound is where a demuxConn hands QoS 0 and 1 publishes: deliver (nil: every
// packet goes to paho), unless the packet is over max bytes (when
// positive): then it is skipped and oversized is called with its topic
// and size.
type inbound struct {
	deliver   func(Message)
	max       int
	oversized func(topic string, size int)
	// connected is told of a CONNACK accepting the connection (and
	// whether the broker still had the session), before any other packet
	// of the connection is read.
	connected func(sessionPresent bool)
}

func newDemuxConn(c net.Conn, in inbound) *demuxConn {
	return &demuxConn{Conn: c, r: bufio.NewReaderSize(c, readBuffer), in: in}
}

// inbound returns where the client's connections hand QoS 0 and 1 publishes:
// its subscription table, under its message bound.
func (c *Client) inbound() inbound {
	return inbound{deliver: c.route, max: c.opts.MaxMessageBytes, oversized: func(topic string, size int) {
		if n := c.stats.oversized.Add(1); n == 1 || n%1000 == 0 {
			c.log.Warn("message over mqtt.max_message_bytes skipped", "topic", topic, "bytes", size, "max", c.opts.MaxMessageBytes, "skipped_total", n)
		}
	}, connected: c.accepted}
}

// Read serves paho the packets it handles, byte for byte.
func (c *demuxConn) Read(p []byte) (int, error) {
	for c.hi == c.hn && c.rest == 0 {
		if err := c.next(); err != nil {
			c.died()
			return 0, err
		}
	}
	if c.hi < c.hn {
		n := copy(p, c.head[c.hi:c.hn])
		c.hi += n
		return n, nil
	}
	n, err := c.r.Read(p[:min(len(p), c.rest)])
	c.rest -= n
	if err != nil {
		c.died()
	}
	return n, err
}

// died marks the connection as read to its end: nothing waits in it, and
// no acknowledgement will come.
func (c *demuxConn) died() {
	c.dead.Store(true)
	c.out.fail()
}

// next reads the next packet's fixed header: a QoS 0 or 1 PUBLISH is read
// and delivered, a PUBACK matched; any other packet is left for paho to read.
func (c *demuxConn) next() error {
	c.buffered.Store(int64(c.r.Buffered())) // the last packet is handled
	b0, err := c.r.ReadByte()
	if err != nil {
		return err
	}
	c.head[0] = b0
	n, length, err := readRemainingLength(c.r, c.head[1:])
	if err != nil {
		return err
	}
	if c.in.deliver != nil {
		switch qos := (b0 & qosBits) >> 1; {
		case b0>>4 == publishType && qos < 2:
			if c.in.max > 0 && length > c.in.max {
				return c.skip(qos, length)
			}
			return c.deliver(b0, qos, length)
		case b0 == pubackHeader && length == 2:
			return c.puback()
		case b0 == connackHeader && length == 2:
			if b, err := c.r.Peek(2); err == nil { // paho reads it too
				c.out.accepted(b[1])
				if b[1] == 0 && c.in.connected != nil {
					c.in.connected(b[0]&1 == 1)
				}
			}
		}
	}
	c.hn, c.hi, c.rest = 1+n, 0, length
	return nil
}

// puback reads a PUBACK's packet identifier and completes the publish
// waiting for it. Every PUBACK is ours (paho publishes only QoS 2); a late
// one, for a publish that stopped waiting, is dropped.
func (c *demuxConn) puback() error {
	hi, err := c.r.ReadByte()
	if err != nil {
		return err
	}
	lo, err := c.r.ReadByte()
	if err != nil {
		return err
	}
	c.out.acked(uint16(hi)<<8 | uint16(lo))
	return nil
}

// deliver reads a QoS 0 or 1 PUBLISH body of length bytes, delivers it
// and, for QoS 1, acknowledges it once delivered (in the order received,
// §4.6). Its payload is a slice of its own (a handler may keep it). A body
// over preallocMax grows as its bytes arrive rather than at the length the
// header claims (up to 256 MB).
func (c *demuxConn) deliver(b0, qos byte, length int) error {
	body, err := c.body(length)
	if err != nil {
		return err
	}
	lead := 2 + 2*int(qos) // topic length, and the packet identifier of QoS 1
	if length < lead {
		return errors.New("mqtt: malformed PUBLISH from the broker: no topic")
	}
	tl := int(body[0])<<8 | int(body[1])
	if lead+tl > length {
		return topicTooLong(tl, length)
	}
	payload := body[lead+tl:]
	c.in.deliver(Message{Topic: string(body[2 : 2+tl]), Payload: payload, Retained: b0&retainBit != 0})
	if qos == 1 {
		return c.ack(body[2+tl], body[3+tl])
	}
	return nil
}

// body reads a packet body of length bytes.
func (c *demuxConn) body(length int) ([]byte, error) {
	if length <= preallocMax {
		body := make([]byte, length)
		_, err := io.ReadFull(c.r, body)
		return body, err
	}
	body, err := io.ReadAll(io.LimitReader(c.r, int64(length)))
	if err == nil && len(body) < length {
		err = io.ErrUnexpectedEOF
	}
	return body, err
}

// pingreq is a PINGREQ packet (§3.12).
var pingreq = []byte{0xC0, 0}

// ping writes a PINGREQ once the broker has accepted the connection; paho
// reads the PINGRESP (and takes it for its own, which does no harm).
func (c *demuxConn) ping() {
	if c.out.writable() {
		_ = c.writePacket(pingreq)
	}
}

// ack writes the PUBACK of a QoS 1 PUBLISH received (§3.4).
func (c *demuxConn) ack(hi, lo byte) error {
	return c.writePacket([]byte{pubackHeader, 2, hi, lo})
}

// skip reads past an oversized QoS 0 or 1 PUBLISH (its topic kept for the
// log) without holding it; a QoS 1 one is acknowledged (the broker would
// otherwise hold it, and its later messages, in flight).
func (c *demuxConn) skip(qos byte, length int) error {
	var tl [2]byte
	if _, err := io.ReadFull(c.r, tl[:]); err != nil {
		return err
	}
	n := min(int(tl[0])<<8|int(tl[1]), length-2)
	topic := make([]byte, min(n, 256))
	if _, err := io.ReadFull(c.r, topic); err != nil {
		return err
	}
	left := length - 2 - len(topic)
	if qos == 1 {
		if n+4 > length {
			return topicTooLong(int(tl[0])<<8|int(tl[1]), length)
		}
		if _, err := c.r.Discard(n - len(topic)); err != nil {
			return err
		}
		var id [2]byte
		if _, err := io.ReadFull(c.r, id[:]); err != nil {
			return err
		}
		if err := c.ack(id[0], id[1]); err != nil {
			return err
		}
		left = length - 4 - n
	}
	if _, err := c.r.Discard(left); err != nil {
		return err
	}
	c.in.oversized(string(topic), length)
	return nil
}

// topicTooLong is the error of a PUBLISH whose topic (tl bytes) and
// packet identifier do not fit in its length.
func topicTooLong(tl, length int) error {
	return fmt.Errorf("mqtt: malformed PUBLISH from the broker: topic of %d bytes in a packet of %d", tl, length)
}

// readRemainingLength reads the fixed header's remaining length (§2.2.3:
// 1 to 4 bytes of 7 bits, least significant first) and copies its bytes
// into raw; it returns how many there were.
func readRemainingLength(r *bufio.Reader, raw []byte) (int, int, error) {
	length, shift := 0, 0
	for i := range 4 {
		b, err := r.ReadByte()
		if err != nil {
			return 0, 0, err
		}
		raw[i] = b
		length |= int(b&0x7f) << shift
		if b&0x80 == 0 {
			return i + 1, length, nil
		}
		shift += 7
	}
	return 0, 0, errors.New("mqtt: malformed packet from the broker: remaining length over 4 bytes")
}
