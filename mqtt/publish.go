package mqtt

import (
	"context"
	"fmt"
	"strings"
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
	ack := make(chan error, 1)
	abort, err := c.publishAsync(ctx, topic, payload, qos, retain, func(err error) { ack <- err })
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
