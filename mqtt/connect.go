package mqtt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// errNoAnswer: the broker did not accept the connection in time.
var errNoAnswer = errors.New("no answer from the broker before the deadline")

// attempt makes one connection attempt, abandoned after ConnectTimeout or
// when stop is closed. Once the broker accepted it, the connection's
// reader reports its loss (onLost), so attempt succeeds even if it is
// lost at once.
func (c *Client) attempt(stop <-chan struct{}) (err error) {
	defer func() {
		if err != nil {
			c.noteFailed(err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.ConnectTimeout)
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	if c.fresh.Load() {
		if err := c.dropSession(ctx); err != nil {
			return err
		}
		c.fresh.Store(false)
	}
	k, present, err := c.handshake(ctx, !c.sess.persistent)
	if err != nil {
		return err
	}
	c.accepted(present)
	resend, dropped := c.sess.resume(present)
	if dropped > 0 {
		c.log.Warn("the broker no longer had the session: unacknowledged publishes are not sent again (their callers were told they may not arrive)", "publishes", dropped)
	}
	if len(resend) > 0 {
		c.log.Info("sending the unacknowledged publishes again", "publishes", len(resend))
		_ = k.writePacket(bytes.Join(resend, nil)) // a failure ends k: its reader reports it
	}
	// Attached before anything is read: what the broker queued for the
	// session arrives at once, and a rule it fires publishes on k.
	attached := c.sess.attach(k)
	c.wg.Add(1)
	go c.readLoop(k)
	go k.keepAlive()
	if attached {
		c.onConnect()
	}
	return nil
}

// handshake dials the broker and exchanges CONNECT and CONNACK (§3.1,
// §3.2); it returns the connection and whether the broker still had the
// session.
func (c *Client) handshake(ctx context.Context, clean bool) (*conn, bool, error) {
	k, err := c.dial(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, errNoAnswer
		}
		return nil, false, err
	}
	stop := context.AfterFunc(ctx, func() { k.close(errNoAnswer) })
	o := c.opts
	cf := &connectFields{clientID: o.ClientID, clean: clean, keepAlive: uint16(keepAlive / time.Second),
		username: o.Username, password: o.Password, hasUser: o.Username != "", hasPass: o.Password != "", will: o.Will}
	p, err := packet{}, k.writePacket(encodeConnect(cf))
	if err == nil {
		p, err = readPacket(k.r, maxControlPacket)
	}
	if !stop() {
		return nil, false, errNoAnswer
	}
	switch {
	case err != nil:
	case p.kind != connackType:
		err = fmt.Errorf("mqtt: the broker answered CONNECT with a packet of type %d", p.kind)
	case p.code == 3: // server unavailable: worth retrying
		err = fmt.Errorf("connection refused: %s", connackReason(p.code))
	case p.code != 0:
		err = &refusedError{code: p.code, err: errors.New(connackReason(p.code))}
	}
	if err != nil {
		k.close(err)
		return nil, false, err
	}
	return k, p.sessionPresent, nil
}

// dropSession connects once with a clean session under the client's id and
// disconnects, so the broker forgets the session and what it queued for
// it (Options.FreshStart).
func (c *Client) dropSession(ctx context.Context) error {
	k, _, err := c.handshake(ctx, true)
	if err != nil {
		return err
	}
	_ = k.writePacket(disconnect)
	k.close(errClosed)
	c.log.Info("started on a clean session: anything the broker queued for an earlier run is dropped, as it would be stale", "client_id", c.opts.ClientID)
	return nil
}

// errClosed ends the connections of a closed client.
var errClosed = errors.New("mqtt: client closed")

// onConnect runs after every successful (re)connect.
func (c *Client) onConnect() {
	c.log.Info("connected")
	c.resubscribeAll()
	c.refreshStatus()
}

// accepted records a CONNACK accepting a connection, before anything else
// comes on it: the outage, if any, ends here.
func (c *Client) accepted(sessionPresent bool) {
	c.mu.Lock()
	taken := c.link.connected(time.Now(), sessionPresent)
	l := c.link
	c.mu.Unlock()
	if taken {
		c.log.Warn("the broker closed the connection and at once accepted a new one: another client probably uses this client id (session taken over); reconnecting less often",
			"client_id", c.opts.ClientID, "takeovers", l.takeovers, "in_a_row", l.streak)
	}
}

// onLost is told by a connection's reader that it ended: it records the
// outage and reconnects, at once unless the connection keeps being taken
// over.
func (c *Client) onLost(k *conn, err error) {
	c.sess.lost(k)
	c.mu.Lock()
	closed := c.closed
	var wait time.Duration
	if !closed {
		wait = c.link.lost(err, time.Now())
	}
	c.mu.Unlock()
	c.refreshStatus()
	if closed {
		return
	}
	c.log.Warn("connection lost; reconnecting", "err", err, "retry_in", wait)
	c.startReconnect(wait)
}

// noteFailed records a failed connection attempt for Link, without the
// broker URL's credentials: /healthz shows it to anyone who can reach it.
func (c *Client) noteFailed(err error) {
	why := err.Error()
	if u, perr := url.Parse(c.opts.Broker); perr == nil && u.User != nil {
		why = strings.ReplaceAll(why, u.User.String(), "xxxxx")
	}
	if len(c.opts.Password) >= 4 { // a shorter one would garble the text
		why = strings.ReplaceAll(why, c.opts.Password, "xxxxx")
	}
	c.mu.Lock()
	c.link.failed++
	c.link.failedWhy, c.link.failedAt = why, time.Now()
	c.mu.Unlock()
}

// attach makes k the connection packets are written to, unless it died
// already.
func (s *session) attach(k *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if k.isDead() {
		return false
	}
	s.cur = k
	return true
}
