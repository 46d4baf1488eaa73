package mqtt

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/mqtt/mqtttest"
)

// sessionBroker accepts clients one after another, answers each CONNECT
// with a CONNACK whose session-present flag comes from present, and leaves
// each packet after it to the test.
func sessionBroker(t *testing.T, present ...bool) (url string, conns <-chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	ch := make(chan net.Conn, len(present))
	go func() {
		for _, p := range present {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			if _, err := readOne(c); err != nil { // CONNECT
				return
			}
			flags := byte(0)
			if p {
				flags = 1
			}
			if _, err := c.Write([]byte{connackType << 4, 2, flags, 0}); err != nil {
				return
			}
			ch <- c
		}
	}()
	return "tcp://" + ln.Addr().String(), ch
}

// TestUnacknowledgedPublishIsSentAgain (MQTT 3.1.1 §4.4): a QoS 1 publish
// the broker did not acknowledge before the connection was lost is sent
// again, with DUP set and its packet identifier, first thing on the next
// connection when the broker still has the persistent session; when it
// does not, the publish is not sent again (its caller was told it may not
// arrive) and the next publish goes out as new.
func TestUnacknowledgedPublishIsSentAgain(t *testing.T) {
	for _, present := range []bool{true, false} {
		name := map[bool]string{true: "session present", false: "session gone"}[present]
		t.Run(name, func(t *testing.T) {
			url, conns := sessionBroker(t, false, present)
			c := dialWith(t, Options{Broker: url, ClientID: "resend-" + randomClientID(), PublishTimeout: time.Minute})
			first := <-conns
			res := newAsyncResult()
			if _, err := c.PublishAsync(ctxT(t), "bl1/set", []byte(`{"state":"ON"}`), 1, false, AckFunc(res.done)); err != nil {
				t.Fatal(err)
			}
			sent := readPublish(t, first)
			first.Close()
			if err := res.wait(t); !errors.Is(err, ErrNotAcknowledged) || !errors.Is(err, ErrNotConnected) {
				t.Fatalf("the publish across the lost connection ended with %v", err)
			}
			second := <-conns
			if !present {
				waitFor(t, 5*time.Second, "the client back", c.Connected)
				if err := c.Publish(ctxT(t), "bl2/set", []byte("new"), 0, false); err != nil {
					t.Fatal(err)
				}
			}
			got := readPublish(t, second)
			switch {
			case present && (got.flags&dupBit == 0 || got.id != sent.id || got.topic != "bl1/set" || !bytes.Equal(got.payload, sent.payload)):
				t.Fatalf("sent again as %s, want %s with DUP", describe(got), describe(sent))
			case !present && got.topic != "bl2/set":
				t.Fatalf("with the session gone the broker read %s first, want the new publish", describe(got))
			}
		})
	}
}

// TestPublishSentAgainReachesSubscribers: through a real broker (mochi;
// Mosquitto when CI has one) whose connection to the client is cut while
// a QoS 1 command is on its way (held in a proxy, then dropped), the
// command still reaches the subscriber once the client is back on its
// persistent session.
func TestPublishSentAgainReachesSubscribers(t *testing.T) {
	for name, start := range outageBrokers(t) {
		t.Run(name, func(t *testing.T) {
			o := start(t).opts
			sub := dialWith(t, o)
			var got inbox
			topic := "resend/" + randomClientID()
			if err := sub.Subscribe(topic, 1, got.handle); err != nil {
				t.Fatal(err)
			}
			p := mqtttest.StartFreezeProxy(t, strings.TrimPrefix(o.Broker, "tcp://"))
			po := o
			po.Broker, po.ClientID, po.PublishTimeout = p.URL(), "resend-"+randomClientID(), time.Minute
			pub := dialWith(t, po)
			p.Freeze()
			res := newAsyncResult()
			if _, err := pub.PublishAsync(ctxT(t), topic, []byte("held"), 1, false, AckFunc(res.done)); err != nil {
				t.Fatal(err)
			}
			p.Down() // what the proxy held is lost
			if err := res.wait(t); !errors.Is(err, ErrNotAcknowledged) {
				t.Fatalf("the publish across the cut ended with %v", err)
			}
			p.Thaw()
			if err := p.Up(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 15*time.Second, "the command sent again to arrive", func() bool { _, ok := got.find("held"); return ok })
			if !pub.Link().SessionResumed {
				t.Errorf("Link = %+v, want the session resumed", pub.Link())
			}
		})
	}
}

// TestRefusedSubscriptionIsReported: a SUBACK return code 0x80 (§3.9.3)
// fails Subscribe with the broker's refusal. A filter set keeps a filter
// the broker refuses or never acknowledges: Health says so, and the
// client subscribes it again until the broker accepts it.
func TestRefusedSubscriptionIsReported(t *testing.T) {
	url, conns := scriptedBroker(t)
	c := dialWith(t, Options{Broker: url, ConnectTimeout: time.Second})
	broker := <-conns
	answer := func(codes ...byte) {
		t.Helper()
		p, err := readOne(broker)
		if err != nil || p.kind != subscribeType || len(p.filters) != len(codes) {
			t.Fatalf("the broker read %v, %v; want a SUBSCRIBE of %d filters", describe(p), err, len(codes))
		}
		if codes[0] == 0xff { // no answer at all
			return
		}
		pkt := append([]byte{subackType << 4, byte(2 + len(codes)), byte(p.id >> 8), byte(p.id)}, codes...)
		if _, err := broker.Write(pkt); err != nil {
			t.Error(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- c.Subscribe("secret/#", 1, func(Message) {}) }()
	answer(0x80)
	if err := <-done; err == nil || !strings.Contains(err.Error(), "refused by the broker (code 0x80)") {
		t.Fatalf("Subscribe refused by the broker = %v", err)
	}
	fs, err := c.SubscribeSet(1, func(Message) {})
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- fs.Set([]string{"a/#", "b/#"}) }()
	answer(0x01, 0x80) // the filters go out sorted: a/# granted, b/# refused
	if err := <-done; err != nil {
		t.Fatalf("Set with b/# refused = %v, want nil (kept and retried)", err)
	}
	if ok, why := c.Health(); ok || !strings.Contains(why, "has not accepted 1 of 2 subscriptions") || !strings.Contains(why, "code 0x80") {
		t.Fatalf("Health with b/# refused = %v %q", ok, why)
	}
	answer(0xff) // the retry of b/# alone: left unanswered
	answer(0x01) // and the next one granted
	waitFor(t, 10*time.Second, "Health ok once the broker granted b/#", func() bool { ok, _ := c.Health(); return ok })
	go func() { done <- fs.Set([]string{"a/#", "b/#"}) }()
	if err := <-done; err != nil {
		t.Fatalf("Set again = %v", err)
	}
}

// TestMosquittoRoundtrip: a QoS 0 and 1 round trip through CI's
// Mosquitto, with its password.
func TestMosquittoRoundtrip(t *testing.T) {
	m, ok := mqtttest.StartMosquitto(t)
	if !ok {
		t.Skip("PILOTHOUSE_TEST_MOSQUITTO(_CONF) not set or no mosquitto binary (CI starts one; see .ci/run)")
	}
	roundtrip(t, Options{Broker: m.URL(), Username: m.User, Password: m.Password, ClientID: "roundtrip-" + randomClientID()})
}
