package mqtt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// firstRetry is the wait after a failed attempt; it doubles up to
// Options.MaxReconnectInterval.
const firstRetry = 250 * time.Millisecond

// connectFirst tries to connect until ConnectTimeout has passed or ctx ends.
// A broker that answers with a refusal (bad credentials, client id) fails at
// once; unreachable brokers are retried with a short backoff.
func (c *Client) connectFirst(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
	defer cancel()
	wait := 100 * time.Millisecond
	var last error // the most informative failure so far
	fail := func() error {
		return fmt.Errorf("mqtt: connect to %s within %s: %w", redact(c.opts.Broker), c.opts.ConnectTimeout, last)
	}
	for {
		err := c.attempt(ctx.Done())
		if err == nil {
			c.awaitFirstReady(ctx)
			return nil
		}
		if last == nil || ctx.Err() == nil {
			last = err
		}
		var refused *refusedError
		if errors.As(err, &refused) || ctx.Err() != nil {
			return fail()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fail()
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// startReconnect runs reconnect(wait) unless the client is closed.
func (c *Client) startReconnect(wait time.Duration) {
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.wg.Add(1)
	}
	c.mu.Unlock()
	if !closed {
		go c.reconnect(wait)
	}
}

// reconnect is the one connector after the first attempt (DialLazy,
// ConnectRetry, every lost connection): it waits wait, then tries until a
// connection is up or Close, firstRetry after a failure, doubling up to
// MaxReconnectInterval, so a broker that comes back is reached within
// that interval.
func (c *Client) reconnect(wait time.Duration) {
	defer c.wg.Done()
	next := min(firstRetry, c.opts.MaxReconnectInterval)
	for attempt := 1; ; attempt++ {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-c.quit:
				t.Stop()
				return
			case <-t.C:
			}
		}
		c.mu.Lock()
		c.link.attempts++
		c.mu.Unlock()
		err := c.attempt(c.quit)
		if err == nil {
			return
		}
		select {
		case <-c.quit:
			return
		default:
		}
		level := slog.LevelDebug
		if attempt == 1 || attempt%60 == 0 {
			level = slog.LevelWarn
		}
		wait, next = next, min(2*next, c.opts.MaxReconnectInterval)
		c.log.Log(context.Background(), level, "broker unreachable; retrying", "attempt", attempt, "retry_in", wait, "err", err)
	}
}

// refusedError is a CONNACK refusal: retrying will not help.
type refusedError struct {
	code byte
	err  error
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("broker refused the connection (code %d): %v", e.code, e.err)
}
func (e *refusedError) Unwrap() error { return e.err }

// attempt makes one connection attempt, abandoned when stop is closed (a
// connection it still makes then is closed: nobody wants it).
func (c *Client) attempt(stop <-chan struct{}) error {
	if c.fresh.Load() {
		if err := c.dropSession(stop); err != nil {
			return err
		}
		c.fresh.Store(false)
	}
	tok := c.pc.Connect()
	select {
	case <-tok.Done():
	case <-stop:
		go func() {
			if <-tok.Done(); tok.Error() == nil {
				c.pc.Disconnect(0)
			}
		}()
		return errors.New("no answer from the broker before the deadline")
	}
	err := tok.Error()
	if err == nil {
		return nil
	}
	if ct, ok := tok.(*paho.ConnectToken); ok {
		// 3 (server unavailable) is worth retrying; the other refusals are not.
		if rc := ct.ReturnCode(); rc != 0 && rc != 3 && rc < 0x80 {
			return &refusedError{code: rc, err: err}
		}
	}
	return err
}

// dropSession connects once with a clean session under the client's id and
// disconnects, so the broker forgets the session and what it queued for
// it (Options.FreshStart).
func (c *Client) dropSession(stop <-chan struct{}) error {
	o := c.opts
	po := paho.NewClientOptions().AddBroker(o.Broker).SetClientID(o.ClientID).
		SetUsername(o.Username).SetPassword(o.Password).SetCleanSession(true).
		SetAutoReconnect(false).SetConnectRetry(false).SetConnectTimeout(o.ConnectTimeout)
	if o.TLS != nil {
		po.SetTLSConfig(o.TLS)
	}
	pc := paho.NewClient(po)
	tok := pc.Connect()
	select {
	case <-tok.Done():
	case <-stop:
		go func() {
			if <-tok.Done(); tok.Error() == nil {
				pc.Disconnect(0)
			}
		}()
		return errors.New("no answer from the broker before the deadline")
	}
	if err := tok.Error(); err != nil {
		return err
	}
	pc.Disconnect(100)
	c.log.Info("dropped the session the broker kept from before this start (events queued meanwhile are stale)", "client_id", o.ClientID)
	return nil
}

// onConnect runs (on a paho goroutine) after every successful (re)connect.
func (c *Client) onConnect() {
	c.log.Info("connected")
	c.resubscribeAll()
	c.refreshStatus()
}

// accepted is told by the connection of each CONNACK accepting it, before
// anything else comes on it: the outage, if any, ends here.
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

// onLost is paho's connection-lost handler: it records the outage and
// reconnects, at once unless the connection keeps being taken over.
func (c *Client) onLost(err error) {
	c.mu.Lock()
	wait := c.link.lost(err, time.Now())
	c.mu.Unlock()
	c.refreshStatus()
	c.log.Warn("connection lost; reconnecting", "err", err, "retry_in", wait)
	c.startReconnect(wait)
}
