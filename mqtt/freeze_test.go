package mqtt

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt/mqtttest"
)

// TestPublishBoundedWhenBrokerFreezes: with the broker frozen, a publish
// returns within PublishTimeout with a clear error even when the caller's
// context allows far longer (an engine run's), and Health says why the
// broker is not ok until it answers again (issue 14, item 14).
func TestPublishBoundedWhenBrokerFreezes(t *testing.T) {
	const timeout = 500 * time.Millisecond
	b := startBroker(t, "127.0.0.1:0")
	for _, tc := range []struct {
		name    string
		qos     byte
		payload int
	}{
		{"qos1 unacknowledged", 1, 16},
		{"qos2 unacknowledged", 2, 16},
		{"qos0 write blocked on a full socket", 0, 8 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mqtttest.StartFreezeProxy(t, b.Addr())
			c := dialWith(t, Options{Broker: p.URL(), PublishTimeout: timeout})
			if err := c.Publish(ctxT(t), "freeze/warmup", []byte("x"), 1, false); err != nil {
				t.Fatal(err)
			}
			if ok, reason := c.Health(); !ok {
				t.Fatalf("Health before the freeze = %q", reason)
			}
			p.Freeze()
			long, cancelLong := context.WithTimeout(context.Background(), 60*time.Second) // as a run's deadline
			defer cancelLong()
			start := time.Now()
			err := c.Publish(long, "freeze/cmd", make([]byte, tc.payload), tc.qos, false)
			took := time.Since(start)
			// The bug was 40 s (keepalive); a busy machine adds a second
			// or two to the timeout.
			if err == nil || took > timeout+3*time.Second {
				t.Fatalf("Publish with the broker frozen = %v after %s, want an error within %s", err, took, timeout)
			}
			if !errors.Is(err, ErrNotConnected) && !strings.Contains(err.Error(), "within "+timeout.String()) {
				t.Errorf("Publish error %q does not say what happened", err)
			}
			waitFor(t, 15*time.Second, "Health to report the frozen broker", func() bool { ok, _ := c.Health(); return !ok })
			_, reason := c.Health()
			if !strings.Contains(reason, "broker") {
				t.Errorf("Health reason %q", reason)
			}
			p.Thaw()
			if tc.qos > 0 {
				waitFor(t, 15*time.Second, "Health to recover once the broker answers", func() bool { ok, _ := c.Health(); return ok })
			}
		})
	}
}

// TestPublishBehindAStuckWriterIsBounded: while a writer is stuck on a
// full socket (the broker frozen), a further publish, handed to it or
// waiting for the socket itself, still returns within PublishTimeout.
func TestPublishBehindAStuckWriterIsBounded(t *testing.T) {
	const timeout = 500 * time.Millisecond
	b := startBroker(t, "127.0.0.1:0")
	p := mqtttest.StartFreezeProxy(t, b.Addr())
	c := dialWith(t, Options{Broker: p.URL(), PublishTimeout: timeout})
	p.Freeze()
	defer p.Thaw()
	stuck := make(chan error, 1)
	go func() { stuck <- c.Publish(context.Background(), "freeze/big", make([]byte, 8<<20), 0, false) }()
	time.Sleep(50 * time.Millisecond) // the writer is on the big one
	start := time.Now()
	err := c.Publish(context.Background(), "freeze/next", []byte("x"), 1, false)
	// The bug was a wait without end; a busy machine adds a second or two.
	if took := time.Since(start); err == nil || took > timeout+3*time.Second {
		t.Fatalf("a publish behind the stuck one = %v after %s, want an error within %s", err, took, timeout)
	}
	if err := <-stuck; err == nil {
		t.Fatal("the big publish to a frozen broker succeeded")
	}
}

// TestUnacknowledgedPublishMayStillArrive (issue 28, item 9): a command
// to a frozen broker that times out waiting for its acknowledgement is
// reported as not acknowledged and possibly still arriving, not as
// failed: once the broker thaws, it is delivered.
func TestUnacknowledgedPublishMayStillArrive(t *testing.T) {
	const timeout = 500 * time.Millisecond
	b := startBroker(t, "127.0.0.1:0")
	sub := dial(t, b.URL())
	var in inbox
	if err := sub.Subscribe("unacked/#", 1, in.handle); err != nil {
		t.Fatal(err)
	}
	p := mqtttest.StartFreezeProxy(t, b.Addr())
	c := dialWith(t, Options{Broker: p.URL(), PublishTimeout: timeout})
	p.Freeze()
	err := c.Publish(context.Background(), "unacked/cmd", []byte("on"), 1, false)
	if !errors.Is(err, ErrNotAcknowledged) || !strings.Contains(err.Error(), "may still arrive") || strings.Contains(err.Error(), "failed") {
		t.Fatalf("Publish to a frozen broker = %v, want it not acknowledged (may still arrive)", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v does not wrap context.DeadlineExceeded", err)
	}
	p.Thaw()
	testutil.Eventually(t, 5*time.Second, "the unacknowledged command to arrive after the thaw", func() bool { _, ok := in.find("on"); return ok })
}
