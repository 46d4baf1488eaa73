package mqtt

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
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
	last := "" // the reason last logged at WARN: a new one is logged at once
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
		if attempt == 1 || attempt%60 == 0 || err.Error() != last {
			level, last = slog.LevelWarn, err.Error()
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
