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
	case pubackType:
		c.sess.acked(p.id)
	case pubrecType, pubrelType, pubcompType:
		return c.handleQoS2(k, p)
	case subackType:
		c.sess.answered(p.id, p.codes)
	case unsubackType:
		c.sess.answered(p.id, []byte{})
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
