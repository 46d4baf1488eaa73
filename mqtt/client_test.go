package mqtt

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// waitFor polls cond until it holds or timeout passes.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
}

func startBroker(t testing.TB, addr string) *Broker {
	t.Helper()
	b, err := StartBroker(addr, quietLogger())
	if err != nil {
		t.Fatalf("StartBroker(%q): %v", addr, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func dial(t testing.TB, url string) *Client { return dialWith(t, Options{Broker: url}) }

// dialWith connects with o (a quiet logger unless o has one) within 5 s
// and closes the client when the test ends.
func dialWith(t testing.TB, o Options) *Client {
	t.Helper()
	if o.Logger == nil {
		o.Logger = quietLogger()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, o)
	if err != nil {
		t.Fatalf("Dial(%s): %v", o.Broker, err)
	}
	t.Cleanup(c.Close)
	return c
}

// inbox collects messages from a handler for assertions.
type inbox struct {
	mu   sync.Mutex
	msgs []Message
}

func (b *inbox) handle(m Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.msgs = append(b.msgs, m)
}

func (b *inbox) all() []Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Message(nil), b.msgs...)
}

// topics is the set of topics received.
func (b *inbox) topics() map[string]bool {
	out := map[string]bool{}
	for _, m := range b.all() {
		out[m.Topic] = true
	}
	return out
}

func (b *inbox) find(payload string) (Message, bool) {
	for _, m := range b.all() {
		if string(m.Payload) == payload {
			return m, true
		}
	}
	return Message{}, false
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestRoundtrip(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	sub := dial(t, b.URL())
	pub := dial(t, b.URL())
	var in inbox
	if err := sub.Subscribe("home/+/state", 1, in.handle); err != nil {
		t.Fatal(err)
	}
	for i, p := range []string{"one", "two", "three"} {
		topic := "home/" + string(rune('a'+i)) + "/state"
		if err := pub.Publish(ctxT(t), topic, []byte(p), 1, false); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	waitFor(t, 3*time.Second, "three messages", func() bool { return len(in.all()) == 3 })
	got := in.all()
	for i, want := range []string{"one", "two", "three"} {
		if string(got[i].Payload) != want || got[i].Retained {
			t.Errorf("message %d = %q retained=%v, want %q live (order preserved)", i, got[i].Payload, got[i].Retained, want)
		}
	}
	if got[1].Topic != "home/b/state" {
		t.Errorf("topic = %q", got[1].Topic)
	}
}

func TestRetainedDelivery(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	pub := dial(t, b.URL())
	if err := pub.Publish(ctxT(t), "z2m/bridge/state", []byte(`{"state":"online"}`), 1, true); err != nil {
		t.Fatal(err)
	}
	sub := dial(t, b.URL())
	var in inbox
	if err := sub.Subscribe("z2m/bridge/#", 1, in.handle); err != nil {
		t.Fatal(err)
	}
	// mochi acknowledges a publish before fanning it out, so the subscriber
	// may also get the original publish live, even before the retained copy.
	waitFor(t, 3*time.Second, "retained delivery", func() bool {
		for _, m := range in.all() {
			if m.Retained && m.Topic == "z2m/bridge/state" && string(m.Payload) == `{"state":"online"}` {
				return true
			}
		}
		return false
	})
	// A message published while subscribed is live, not retained.
	if err := pub.Publish(ctxT(t), "z2m/bridge/state", []byte(`live`), 1, true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "live message", func() bool { _, ok := in.find("live"); return ok })
	if m, _ := in.find("live"); m.Retained {
		t.Errorf("live message delivered with Retained=true")
	}
}

func TestResubscribeAfterBrokerRestart(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	addr := b.Addr()
	sub := dial(t, b.URL())
	pub := dial(t, b.URL())
	var ups, downs atomic.Int32
	sub.OnConnectionChange(func(up bool) {
		if up {
			ups.Add(1)
		} else {
			downs.Add(1)
		}
	})
	var in inbox
	if err := sub.Subscribe("cmd/#", 1, in.handle); err != nil {
		t.Fatal(err)
	}
	if err := pub.Publish(ctxT(t), "cmd/a", []byte("before"), 1, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "message before restart", func() bool { _, ok := in.find("before"); return ok })

	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "subscriber to notice the broker is gone", func() bool { return !sub.Connected() })
	waitFor(t, 3*time.Second, "down notification", func() bool { return downs.Load() == 1 })

	// The first connection's up notification may still arrive after
	// OnConnectionChange was set (the notifier runs on its own goroutine): count
	// the ones after the restart.
	upsBefore := ups.Load()
	startBroker(t, addr) // same port
	waitFor(t, 15*time.Second, "both clients to reconnect", func() bool { return sub.Connected() && pub.Connected() })
	waitFor(t, 3*time.Second, "up notification", func() bool { return ups.Load() == upsBefore+1 })
	// The subscriber re-subscribes in its OnConnect handler, which may
	// finish just after Connected turns true: publish until it arrives.
	waitFor(t, 5*time.Second, "message after restart", func() bool {
		_ = pub.Publish(ctxT(t), "cmd/a", []byte("after"), 1, false)
		_, ok := in.find("after")
		return ok
	})
}

func TestPublishWhileBrokerDown(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	c := dial(t, b.URL())
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "disconnect", func() bool { return !c.Connected() })
	start := time.Now()
	err := c.Publish(ctxT(t), "cmd/light/set", []byte(`{"state":"ON"}`), 1, false)
	if !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Publish while down = %v, want ErrNotConnected", err)
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("Publish while down took %s, want immediate", d)
	}
}

func TestDialFailsAfterConnectTimeout(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	url := b.URL()
	_ = b.Close() // nothing listens there now
	start := time.Now()
	_, err := Dial(context.Background(), Options{Broker: url, ConnectTimeout: 300 * time.Millisecond, Logger: quietLogger()})
	if err == nil {
		t.Fatal("Dial to a closed port succeeded")
	}
	if !strings.Contains(err.Error(), "connect to tcp://127.0.0.1:") {
		t.Errorf("error %q does not name the broker", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Dial took %s with ConnectTimeout 300ms", d)
	}
}

func TestDialLazyConnectsWhenBrokerAppears(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	addr, url := b.Addr(), b.URL()
	_ = b.Close()
	c, err := DialLazy(Options{Broker: url, MaxReconnectInterval: 200 * time.Millisecond, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var in inbox
	if err := c.Subscribe("early/#", 0, in.handle); err != nil {
		t.Fatalf("Subscribe before connect: %v", err)
	}
	if err := c.Publish(ctxT(t), "early/x", []byte("x"), 1, false); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("Publish before connect = %v, want ErrNotConnected", err)
	}
	b2 := startBroker(t, addr)
	waitFor(t, 5*time.Second, "lazy connect", c.Connected)
	pub := dial(t, b2.URL())
	waitFor(t, 5*time.Second, "subscription made before connect to work", func() bool {
		_ = pub.Publish(ctxT(t), "early/x", []byte("hello"), 1, false)
		_, ok := in.find("hello")
		return ok
	})
}

func TestBrokerPasswordAuth(t *testing.T) {
	b, err := StartBroker("127.0.0.1:0", quietLogger(), WithUsers(map[string]string{"pilot": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx := ctxT(t)
	start := time.Now()
	_, err = Dial(ctx, Options{Broker: b.URL(), Username: "pilot", Password: "wrong", Logger: quietLogger()})
	if err == nil {
		t.Fatal("Dial with a wrong password succeeded")
	}
	if !strings.Contains(err.Error(), "broker refused the connection") || time.Since(start) > time.Second {
		t.Errorf("Dial with a wrong password = %q after %s, want an immediate refusal", err, time.Since(start))
	}
	c, err := Dial(ctx, Options{Broker: b.URL(), Username: "pilot", Password: "s3cret", Logger: quietLogger()})
	if err != nil {
		t.Fatalf("Dial with the right password: %v", err)
	}
	c.Close()
}

func TestCloseIdempotentAndBounded(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	c := dial(t, b.URL())
	block := make(chan struct{})
	if err := c.Subscribe("slow", 0, func(Message) { <-block }); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(ctxT(t), "slow", []byte("x"), 0, false); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.Close()
	c.Close()
	close(block)
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Close took %s", d)
	}
	if err := c.Publish(ctxT(t), "x", nil, 0, false); !errors.Is(err, ErrNotConnected) {
		t.Errorf("Publish after Close = %v, want ErrNotConnected", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Broker.Close = %v", err)
	}
}

func TestInvalidInput(t *testing.T) {
	for _, broker := range []string{"", "http://x:1", "tcp://"} {
		if _, err := DialLazy(Options{Broker: broker}); err == nil {
			t.Errorf("DialLazy(%q) succeeded", broker)
		}
	}
	b := startBroker(t, "127.0.0.1:0")
	c := dial(t, b.URL())
	for _, f := range []string{"", "a/#/b", "a+/b", "a/b#"} {
		if err := c.Subscribe(f, 0, func(Message) {}); err == nil {
			t.Errorf("Subscribe(%q) succeeded", f)
		}
	}
	for _, topic := range []string{"", "a/+", "a/#"} {
		if err := c.Publish(ctxT(t), topic, nil, 0, false); err == nil {
			t.Errorf("Publish(%q) succeeded", topic)
		}
	}
	if !c.Connected() {
		t.Error("invalid input cost the connection")
	}
}

func BenchmarkRoundtrip(b *testing.B) {
	br := startBroker(b, "127.0.0.1:0")
	sub := dial(b, br.URL())
	pub := dial(b, br.URL())
	got := make(chan struct{}, 1)
	if err := sub.Subscribe("bench/rt", 1, func(Message) { got <- struct{}{} }); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	payload := []byte(`{"state":"ON","brightness":100}`)
	for b.Loop() {
		if err := pub.Publish(ctx, "bench/rt", payload, 1, false); err != nil {
			b.Fatal(err)
		}
		<-got
	}
}

// mochi shares packet ids between its deliveries and our SUBSCRIBEs: a
// SUBSCRIBE sent while retained messages are in flight must still succeed.
func TestSubscribeWhileRetainedInFlight(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	pub := dial(t, b.URL())
	for i := range 50 {
		topic := "flood/" + string(rune('a'+i%26)) + "/" + string(rune('a'+i/26))
		if err := pub.Publish(ctxT(t), topic, []byte("x"), 1, true); err != nil {
			t.Fatal(err)
		}
	}
	c := dial(t, b.URL())
	var in inbox
	for _, f := range []string{"flood/#", "other/1", "other/2", "other/3"} {
		if err := c.Subscribe(f, 1, in.handle); err != nil {
			t.Fatalf("Subscribe(%s): %v", f, err)
		}
	}
	waitFor(t, 3*time.Second, "50 retained messages", func() bool { return len(in.all()) >= 50 })
}

func TestDialConnectRetry(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	addr, url := b.Addr(), b.URL()
	_ = b.Close()
	start := time.Now()
	c, err := Dial(ctxT(t), Options{Broker: url, ConnectRetry: true, MaxReconnectInterval: 200 * time.Millisecond, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("Dial with ConnectRetry while the broker is down: %v", err)
	}
	t.Cleanup(c.Close)
	if d := time.Since(start); d > time.Second {
		t.Errorf("Dial with ConnectRetry took %s", d)
	}
	if c.Connected() {
		t.Fatal("connected to a closed port")
	}
	startBroker(t, addr)
	waitFor(t, 5*time.Second, "background connect", c.Connected)
}

// TestSlowHandlerHoldsTheConnectionBack: a handler behind its queue makes
// the connection wait (counted) and loses nothing.
func TestSlowHandlerHoldsTheConnectionBack(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	c := dialWith(t, Options{Broker: b.URL(), QueueSize: 1})
	var got inbox
	if err := c.Subscribe("slow/#", 0, func(m Message) { time.Sleep(10 * time.Millisecond); got.handle(m) }); err != nil {
		t.Fatal(err)
	}
	pub := dial(t, b.URL())
	const n = 30
	for i := range n {
		if err := pub.Publish(ctxT(t), "slow/x", []byte{byte('a' + i)}, 0, false); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "every message", func() bool { return len(got.all()) == n })
	for i, m := range got.all() {
		if m.Payload[0] != byte('a'+i) {
			t.Fatalf("message %d is %q: out of order", i, m.Payload)
		}
	}
	if d := c.Delivery(); d.Backpressured == 0 || d.Waited <= 0 || d.Dropped != 0 {
		t.Fatalf("Delivery() = %+v, want backpressure and no drops", d)
	}
}

// TestStuckHandlerDropsAfterTheStallLimit: a handler stuck for good holds
// the connection back at most StallLimit a message, then loses messages
// (counted), and the other subscriptions go on.
func TestStuckHandlerDropsAfterTheStallLimit(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	c := dialWith(t, Options{Broker: b.URL(), QueueSize: 1, StallLimit: 50 * time.Millisecond})
	release := make(chan struct{})
	defer close(release)
	var fast inbox
	if err := c.Subscribe("slow/#", 0, func(Message) { <-release }); err != nil {
		t.Fatal(err)
	}
	if err := c.Subscribe("fast/#", 0, fast.handle); err != nil {
		t.Fatal(err)
	}
	pub := dial(t, b.URL())
	for range 5 {
		if err := pub.Publish(ctxT(t), "slow/x", []byte("x"), 1, false); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 3*time.Second, "drops to be counted", func() bool { return c.Dropped() > 0 })
	if err := pub.Publish(ctxT(t), "fast/x", []byte("ok"), 1, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "fast subscription delivery", func() bool { _, ok := fast.find("ok"); return ok })
}
