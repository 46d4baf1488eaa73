package mqtt

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// healthState is what Client.Health knows beyond the connection and its
// Link.
type healthState struct {
	unansweredAt    time.Time // start of a publish the broker did not answer in time
	unansweredTopic string
}

// Health reports whether the broker is connected and answering, and if not
// why, for /healthz. Not ok: while disconnected (how long, and why the
// connection was lost: a broker silent for silenceLimit is "not
// answering"); while a publish timed out and nothing at all has come from
// the broker since it was sent; and first of all while the session is
// being taken over again and again (another client with the same client
// id), connected or not, until a connection outlives any twin's backoff.
func (c *Client) Health() (ok bool, reason string) {
	c.mu.Lock()
	h, l := c.health, c.link
	c.mu.Unlock()
	now := time.Now()
	if l.takenOver(now, c.Connected()) {
		return false, fmt.Sprintf("mqtt session taken over: the broker closed the connection and at once accepted a new one %d times in a row (last %s ago); another client probably uses client id %q, and gets the messages meanwhile",
			l.streak, now.Sub(l.lastTakeover).Round(time.Second), c.opts.ClientID)
	}
	if !c.Connected() {
		if l.lostAt.IsZero() || l.away > 0 {
			return false, "mqtt disconnected: the broker is not reachable"
		}
		away := now.Sub(l.lostAt).Round(100 * time.Millisecond)
		if l.lostSilent {
			return false, fmt.Sprintf("mqtt broker not answering: %s; connection dropped %s ago, reconnecting", l.lostWhy, away)
		}
		return false, fmt.Sprintf("mqtt disconnected: connection to the broker lost %s ago (%s), reconnecting", away, l.lostWhy)
	}
	last := time.Unix(0, c.lastRead.Load())
	if !h.unansweredAt.IsZero() && last.Before(h.unansweredAt) {
		return false, fmt.Sprintf("mqtt broker not answering: a publish to %q %s ago got no answer within %s, and nothing has come from the broker since",
			h.unansweredTopic, now.Sub(h.unansweredAt).Round(time.Millisecond), c.opts.PublishTimeout)
	}
	if reason, refused := c.refusedHealth(); refused {
		return false, reason
	}
	return true, ""
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

// unackedError is the error of a publish written to the broker that was
// not acknowledged (ErrNotAcknowledged): it timed out (and wraps
// context.DeadlineExceeded) or the connection was lost first (and wraps
// ErrNotConnected).
type unackedError struct {
	why  string
	lost bool
}

func (e *unackedError) Error() string { return "mqtt: " + e.why + "; it may still arrive" }

func (e *unackedError) Is(target error) bool {
	return target == ErrNotAcknowledged || (e.lost && target == ErrNotConnected) || (!e.lost && target == context.DeadlineExceeded)
}

// errLostUnacked is what the publishes waiting for their acknowledgement
// hear when the connection goes.
var errLostUnacked error = &unackedError{why: "the connection to the broker was lost before it acknowledged the message", lost: true}

// publishTimedOut is Publish's error when PublishTimeout passed.
func (c *Client) publishTimedOut(start time.Time, topic string, qos byte) error {
	c.noteUnanswered(start, topic)
	if qos == 0 {
		return fmt.Errorf("mqtt: publish %q: the broker did not take the message within %s (is it frozen or overloaded?): %w",
			topic, c.opts.PublishTimeout, context.DeadlineExceeded)
	}
	return &unackedError{why: fmt.Sprintf("publish %q: no acknowledgement from the broker within %s (is it frozen or overloaded?)", topic, c.opts.PublishTimeout)}
}

// publishFailed translates the error of a publish that failed (a write,
// of the connection).
func (c *Client) publishFailed(start time.Time, topic string, err error) error {
	if errors.Is(err, ErrNotAcknowledged) {
		return err
	}
	if errors.Is(err, ErrNotConnected) {
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
