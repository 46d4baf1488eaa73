package mqtt

// Publishes over Options.MaxMessageBytes: read past without being held,
// acknowledged, counted and logged.

import (
	"fmt"
	"io"
)

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
