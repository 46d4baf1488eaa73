package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// healthState is what Client.Health knows beyond the connection itself.
type healthState struct {
	unansweredAt    time.Time // start of a publish the broker did not answer in time
	unansweredTopic string
	lost            string // why the last connection was lost
}

// Health reports whether the broker is connected and answering, and if not
// why, for /healthz. The connection alone says too little: paho notices a
// frozen broker only after the keepalive and the ping timeout (40 s), and
// until then the connection looks open. So the broker is also not ok when
// a publish timed out and nothing at all has come from the broker since it
// was sent, or when nothing has come for longer than the keepalive and
// ping timeout (paho pings after the keepalive; a live broker answers).
func (c *Client) Health() (ok bool, reason string) {
	c.mu.Lock()
	h := c.health
	c.mu.Unlock()
	if !c.Connected() {
		if h.lost != "" {
			return false, "mqtt disconnected: connection to the broker lost (" + h.lost + ")"
		}
		return false, "mqtt disconnected: the broker is not reachable"
	}
	last := time.Unix(0, c.lastRead.Load())
	if !h.unansweredAt.IsZero() && last.Before(h.unansweredAt) {
		return false, fmt.Sprintf("mqtt broker not answering: a publish to %q %s ago got no answer within %s, and nothing has come from the broker since",
			h.unansweredTopic, time.Since(h.unansweredAt).Round(time.Millisecond), c.opts.PublishTimeout)
	}
	if quiet := time.Since(last); quiet > keepAlive+pingTimeout {
		return false, fmt.Sprintf("mqtt broker not answering: nothing has come from it for %s (keepalive %s)", quiet.Round(time.Second), keepAlive)
	}
	return true, ""
}

// noteLost records why the connection was lost.
func (c *Client) noteLost(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.health.lost = err.Error()
	}
}

// noteUnanswered records a publish started at start that the broker did
// not answer in time, unless an earlier one is still unanswered.
func (c *Client) noteUnanswered(start time.Time, topic string) {
	last := time.Unix(0, c.lastRead.Load())
	c.mu.Lock()
	defer c.mu.Unlock()
	if h := &c.health; h.unansweredAt.IsZero() || h.unansweredAt.Before(last) {
		h.unansweredAt, h.unansweredTopic = start, topic
	}
}

// publishTimedOut is Publish's error when PublishTimeout passed.
func (c *Client) publishTimedOut(start time.Time, topic string, qos byte) error {
	c.noteUnanswered(start, topic)
	what := "no acknowledgement from the broker"
	if qos == 0 {
		what = "the broker did not take the message"
	}
	return fmt.Errorf("mqtt: publish %q: %s within %s (is it frozen or overloaded?): %w",
		topic, what, c.opts.PublishTimeout, context.DeadlineExceeded)
}

// publishFailed translates the error of a publish that failed (a write,
// or paho's token).
func (c *Client) publishFailed(start time.Time, topic string, err error) error {
	if errors.Is(err, paho.ErrNotConnected) || errors.Is(err, ErrNotConnected) {
		return ErrNotConnected
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.noteUnanswered(start, topic)
		return fmt.Errorf("mqtt: publish %q: the broker did not take the message within %s (write timed out; is it frozen?): %w",
			topic, c.opts.PublishTimeout, context.DeadlineExceeded)
	}
	return fmt.Errorf("mqtt: publish %q: %w", topic, err)
}
