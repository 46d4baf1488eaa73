package mqtt

import (
	"fmt"
	"testing"
	"time"
)

// TestBusyReportsASaturatedHandler: a handler that blocks makes Delivery
// report its subscription busy (while it blocks, before it returns); a
// handler that keeps up does not. Both connections (TCP Client, Inline),
// both kinds of subscription (plain, filter set: run by the deliverer).
func TestBusyReportsASaturatedHandler(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	type conn interface {
		PubSub
		Delivery() Delivery
	}
	for _, tc := range []struct {
		name string
		conn func() conn
		set  bool
	}{
		{"client", func() conn { return dial(t, b.URL()) }, false},
		{"client set", func() conn { return dial(t, b.URL()) }, true},
		{"inline", func() conn { in := b.Inline(quietLogger()); t.Cleanup(in.Close); return in }, false},
		{"inline set", func() conn { in := b.Inline(quietLogger()); t.Cleanup(in.Close); return in }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.conn()
			pub := dial(t, b.URL())
			topic := "busy/" + tc.name
			release := make(chan struct{})
			var got inbox
			h := func(m Message) {
				got.handle(m)
				if string(m.Payload) == "block" {
					<-release
				}
			}
			subscribeT(t, c, topic, tc.set, h)
			for i := range 50 {
				if err := pub.Publish(ctxT(t), topic, []byte(fmt.Sprint(i)), 1, false); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, 5*time.Second, "50 messages", func() bool { return len(got.all()) == 50 })
			// A young meter measures since it started: on a loaded machine
			// the handler calls can fill much of its first milliseconds.
			// A handler that keeps up reads below half within a second.
			waitFor(t, time.Second, "busy < 0.5 for a handler that keeps up", func() bool { return c.Delivery().Busy < 0.5 })
			if err := pub.Publish(ctxT(t), topic, []byte("block"), 1, false); err != nil {
				t.Fatal(err)
			}
			defer close(release)
			waitFor(t, 10*time.Second, "busy ≥ 0.9 while the handler blocks", func() bool { return c.Delivery().Busy >= 0.9 })
		})
	}
}

func subscribeT(t *testing.T, c PubSub, topic string, set bool, h Handler) {
	t.Helper()
	if !set {
		if err := c.Subscribe(topic, 1, h); err != nil {
			t.Fatal(err)
		}
		return
	}
	fs, err := SubscribeSet(c, 1, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Set([]string{topic}); err != nil {
		t.Fatal(err)
	}
}

// TestBusyMeterWindow: busy time counts in the second it happened, over
// the window's whole seconds plus the one in progress, and leaves it.
func TestBusyMeterWindow(t *testing.T) {
	const s = int64(time.Second)
	for _, tc := range []struct {
		name    string
		spans   [][2]int64 // busy [from, to)
		running int64      // -1: idle
		now     int64
		want    float64
	}{
		{"idle", nil, -1, 3 * s, 0},
		{"one second of two", [][2]int64{{0, s}}, -1, 2 * s, 0.5},
		{"out of the window", [][2]int64{{0, s}}, -1, 10 * s, 0},
		{"running since long", nil, 0, 20 * s, 1},
		{"running for 3 s of the 4", nil, 17 * s, 20 * s, 0.75},
		{"long span split over seconds", [][2]int64{{s / 2, 9 * s}}, -1, 9 * s, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newBusyMeter()
			for _, sp := range tc.spans {
				m.add(sp[0], sp[1])
			}
			m.running = tc.running
			if got := m.fractionAt(tc.now); got < tc.want-0.001 || got > tc.want+0.001 {
				t.Fatalf("fraction %.4f, want %.4f", got, tc.want)
			}
		})
	}
}
