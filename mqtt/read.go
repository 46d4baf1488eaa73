package mqtt

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// preallocMax: a PUBLISH body up to this size is read into a buffer of its
// size at once; a bigger one grows as its bytes arrive rather than at the
// length the header claims.
const preallocMax = 64 << 10

// readLoop is the connection's one reading goroutine: it reads the
// broker's packets until the connection ends, then reports the loss.
func (c *Client) readLoop(k *conn) {
	defer c.wg.Done()
	err := c.readPackets(k)
	c.onLost(k, k.reason(err))
}

// readPackets handles each packet as it comes: a PUBLISH is delivered on
// this goroutine (to the subscription table and its queues, whose
// backpressure holds this goroutine, and so the broker) and then
// acknowledged, in the order received (§4.6); an acknowledgement completes
// what waits for it.
func (c *Client) readPackets(k *conn) error {
	for {
		k.buffered.Store(int64(k.r.Buffered())) // the last packet is handled
		b0, length, err := readHeader(k.r)
		if err != nil {
			return err
		}
		if b0>>4 == publishType {
			if err := c.readPublish(k, b0, length); err != nil {
				return err
			}
			continue
		}
		if length > maxControlPacket {
			return fmt.Errorf("mqtt: packet of type %d with %d bytes from the broker (at most %d)", b0>>4, length, maxControlPacket)
		}
		p, err := readControl(k.r, b0, length)
		if err != nil {
			return err
		}
		if err := c.handle(k, p); err != nil {
			return err
		}
	}
}

// readControl reads and decodes a packet other than PUBLISH. One that
// fits the read buffer (every packet but a huge SUBACK) is decoded where
// it lies, so a PUBACK costs no allocation.
func readControl(r *bufio.Reader, b0 byte, length int) (packet, error) {
	if length > r.Size() {
		body := make([]byte, length)
		if _, err := io.ReadFull(r, body); err != nil {
			return packet{}, noEOF(err)
		}
		return decodeControl(b0, body)
	}
	body, err := r.Peek(length)
	if err != nil {
		return packet{}, noEOF(err)
	}
	p, err := decodeControl(b0, body)
	_, _ = r.Discard(length)
	return p, err
}

// handle acts on a packet other than PUBLISH.
func (c *Client) handle(k *conn, p packet) error {
	switch p.kind {
	case pubackType, pubcompType:
		c.sess.acked(p.id)
	case pubrecType:
		c.sess.releasing(p.id)
		return k.writePacket(encodeAck(pubrelType, p.id))
	case subackType:
		c.sess.answered(p.id, p.codes)
	case unsubackType:
		c.sess.answered(p.id, []byte{})
	case pubrelType:
		c.sess.released(p.id)
		return k.writePacket(encodeAck(pubcompType, p.id))
	case pingrespType:
	case disconnectType: // mochi's, as it closes a connection taken over
		return fmt.Errorf("mqtt: the broker closed the connection (DISCONNECT): %w", io.EOF)
	default:
		return fmt.Errorf("mqtt: unexpected packet of type %d from the broker", p.kind)
	}
	return nil
}

// readPublish reads a PUBLISH body of length bytes, delivers it unless
// it is over MaxMessageBytes (then skipped) or a QoS 2 one delivered
// already, and acknowledges it (PUBACK for QoS 1, PUBREC for QoS 2).
func (c *Client) readPublish(k *conn, b0 byte, length int) error {
	qos := (b0 & qosBits) >> 1
	if qos == 3 {
		return errors.New("mqtt: malformed PUBLISH from the broker: QoS 3")
	}
	if max := c.opts.MaxMessageBytes; max > 0 && length > max {
		return c.skip(k, qos, length)
	}
	body, err := readBody(k.r, length)
	if err != nil {
		return err
	}
	p, err := decodePublish(packet{kind: publishType, flags: b0 & 0x0f}, body)
	if err != nil {
		return err
	}
	if qos < 2 || c.sess.received2(p.id) {
		c.route(Message{Topic: p.topic, Payload: p.payload, Retained: b0&retainBit != 0})
	}
	return c.ackPublish(k, qos, p.id)
}

// ackPublish answers a PUBLISH received at qos.
func (c *Client) ackPublish(k *conn, qos byte, id uint16) error {
	switch qos {
	case 1:
		return k.writePacket(encodeAck(pubackType, id))
	case 2:
		return k.writePacket(encodeAck(pubrecType, id))
	}
	return nil
}

// readBody reads a packet body of length bytes.
func readBody(r *bufio.Reader, length int) ([]byte, error) {
	if length <= preallocMax {
		body := make([]byte, length)
		_, err := io.ReadFull(r, body)
		return body, noEOF(err)
	}
	body, err := io.ReadAll(io.LimitReader(r, int64(length)))
	if err == nil && len(body) < length {
		err = io.ErrUnexpectedEOF
	}
	return body, err
}

// skip reads past an oversized PUBLISH without holding it (its topic kept
// for the log) and acknowledges it: the broker would otherwise hold it,
// and its later messages, in flight.
func (c *Client) skip(k *conn, qos byte, length int) error {
	var tl [2]byte
	if _, err := io.ReadFull(k.r, tl[:]); err != nil {
		return noEOF(err)
	}
	n := int(be16(tl[:]))
	lead := 2 + n
	if qos > 0 {
		lead += 2
	}
	if lead > length {
		return fmt.Errorf("mqtt: malformed PUBLISH from the broker: topic of %d bytes in a packet of %d", n, length)
	}
	topic := make([]byte, min(n, 256))
	if _, err := io.ReadFull(k.r, topic); err != nil {
		return noEOF(err)
	}
	if _, err := k.r.Discard(n - len(topic)); err != nil {
		return noEOF(err)
	}
	var id [2]byte
	if qos > 0 {
		if _, err := io.ReadFull(k.r, id[:]); err != nil {
			return noEOF(err)
		}
	}
	if _, err := k.r.Discard(length - lead); err != nil {
		return noEOF(err)
	}
	if qos == 2 {
		c.sess.received2(be16(id[:]))
	}
	c.oversized(string(topic), length)
	return c.ackPublish(k, qos, be16(id[:]))
}

// oversized counts and logs (now and then) a message skipped for its size.
func (c *Client) oversized(topic string, size int) {
	if n := c.stats.oversized.Add(1); n == 1 || n%1000 == 0 {
		c.log.Warn("message over mqtt.max_message_bytes skipped", "topic", topic, "bytes", size, "max", c.opts.MaxMessageBytes, "skipped_total", n)
	}
}
