package mqtt

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.mqtt.golang/packets"
)

// pipeConn is a net.Conn whose reads come from r; writes go to w (nil:
// discarded).
type pipeConn struct {
	net.Conn
	r io.Reader
	w *bytes.Buffer
}

func (p pipeConn) Read(b []byte) (int, error) { return p.r.Read(b) }

func (p pipeConn) Write(b []byte) (int, error) {
	if p.w != nil {
		p.w.Write(b)
	}
	return len(b), nil
}

func encode(t testing.TB, p packets.ControlPacket) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func pubPacket(topic string, payload []byte, qos byte, retain bool, id uint16) *packets.PublishPacket {
	p := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
	p.TopicName, p.Payload, p.Qos, p.Retain, p.MessageID = topic, payload, qos, retain, id
	return p
}

// TestDemuxDeliversQoS0AndPassesTheRest: QoS 0 publishes (short, empty,
// retained, and one whose remaining length takes 3 bytes) are delivered
// with their topic, payload and retain flag, and so are QoS 1 ones, each
// acknowledged in turn; a PUBACK is the connection's own; every other
// packet reaches paho's packet reader exactly as sent, in order.
func TestDemuxDeliversQoS0AndPassesTheRest(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 20000)
	puback := packets.NewControlPacket(packets.Puback).(*packets.PubackPacket)
	puback.MessageID = 7
	stream := []struct {
		p       packets.ControlPacket
		toPaho  bool
		own     bool // read by the connection itself (a PUBACK)
		topic   string
		payload []byte
		retain  bool
	}{
		{p: pubPacket("zigbee2mqtt/bs1", []byte(`{"seq":1}`), 0, false, 0), topic: "zigbee2mqtt/bs1", payload: []byte(`{"seq":1}`)},
		{p: puback, own: true},
		{p: pubPacket("a/b", nil, 0, true, 0), topic: "a/b", payload: []byte{}, retain: true},
		{p: pubPacket("q1", []byte("one"), 1, false, 9), topic: "q1", payload: []byte("one")},
		{p: pubPacket("big", big, 0, false, 0), topic: "big", payload: big},
		{p: packets.NewControlPacket(packets.Pingresp), toPaho: true},
		{p: pubPacket("q2", big, 2, true, 10), toPaho: true},
	}
	var wire bytes.Buffer
	for _, s := range stream {
		wire.Write(encode(t, s.p))
	}
	var got []Message
	var acks bytes.Buffer
	c := newDemuxConn(pipeConn{r: iotestOneByte(&wire), w: &acks}, inbound{deliver: func(m Message) { got = append(got, m) }})
	for _, s := range stream {
		if !s.toPaho {
			continue
		}
		p, err := packets.ReadPacket(c)
		if err != nil {
			t.Fatalf("paho's read of %s: %v", s.p.String(), err)
		}
		if !bytes.Equal(encode(t, p), encode(t, s.p)) {
			t.Fatalf("paho read %s, want %s", p.String(), s.p.String())
		}
	}
	if _, err := packets.ReadPacket(c); err != io.EOF {
		t.Fatalf("after the stream: %v, want EOF", err)
	}
	if want := []byte{0x40, 2, 0, 9}; !bytes.Equal(acks.Bytes(), want) {
		t.Fatalf("the connection wrote % x, want the PUBACK of the QoS 1 message, % x", acks.Bytes(), want)
	}
	var want []Message
	for _, s := range stream {
		if !s.toPaho && !s.own {
			want = append(want, Message{Topic: s.topic, Payload: s.payload, Retained: s.retain})
		}
	}
	if len(got) != len(want) {
		t.Fatalf("delivered %d messages, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Topic != want[i].Topic || !bytes.Equal(got[i].Payload, want[i].Payload) || got[i].Retained != want[i].Retained {
			t.Fatalf("message %d = %q %q retained=%v, want %q %q %v", i, got[i].Topic, got[i].Payload, got[i].Retained,
				want[i].Topic, want[i].Payload, want[i].Retained)
		}
	}
}

// iotestOneByte reads one byte at a time, the worst a socket can do.
func iotestOneByte(r io.Reader) io.Reader { return oneByte{r} }

type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

// TestDemuxRefusesMalformedPackets: a broken QoS 0 PUBLISH or remaining
// length is an error (paho then drops the connection), never a panic or a
// message made up.
func TestDemuxRefusesMalformedPackets(t *testing.T) {
	for name, wire := range map[string][]byte{
		"topic longer than the packet": {0x30, 3, 0, 9, 'a'},
		"QoS 1 without its identifier": {0x32, 3, 0, 1, 'a'},
		"no topic length":              {0x30, 1, 0},
		"remaining length of 5 bytes":  {0x30, 0x80, 0x80, 0x80, 0x80, 0x01},
		"body cut short":               {0x30, 10, 0, 1, 'a'},
	} {
		t.Run(name, func(t *testing.T) {
			delivered := 0
			c := newDemuxConn(pipeConn{r: bytes.NewReader(wire)}, inbound{deliver: func(Message) { delivered++ }})
			_, err := c.Read(make([]byte, 16))
			if err == nil || delivered != 0 {
				t.Fatalf("read = %v, delivered %d; want an error and nothing delivered", err, delivered)
			}
			if name != "body cut short" && !strings.Contains(err.Error(), "malformed") {
				t.Fatalf("error %q does not say the packet is malformed", err)
			}
		})
	}
}

// FuzzDemuxConn: whatever the broker sends, the demultiplexer neither
// panics nor loses bytes: what it does not deliver, paho reads unchanged.
func FuzzDemuxConn(f *testing.F) {
	f.Add([]byte{0x30, 5, 0, 1, 'a', 'h', 'i', 0x40, 2, 0, 7})
	f.Add([]byte{0x32, 6, 0, 1, 'a', 0, 1, 'x'})
	f.Add([]byte{0xd0, 0})
	f.Add([]byte{0x20, 2, 0, 0, 0x40, 2, 0x80, 1, 0x40, 3, 0, 1, 2})
	f.Fuzz(func(t *testing.T, wire []byte) {
		c := newDemuxConn(pipeConn{r: bytes.NewReader(wire)}, inbound{deliver: func(m Message) {
			if len(m.Topic) > len(wire) || len(m.Payload) > len(wire) {
				t.Fatalf("message larger than the input: %d + %d bytes from %d", len(m.Topic), len(m.Payload), len(wire))
			}
		}, max: 64, oversized: func(string, int) {}})
		out, _ := io.ReadAll(c)
		if len(out) > len(wire) {
			t.Fatalf("paho read %d bytes from %d", len(out), len(wire))
		}
	})
}

// TestDemuxSkipsAndAcknowledgesOversizedQoS1: a QoS 1 message over the
// bound is skipped, counted and still acknowledged (the broker would hold
// it in flight, and then the messages after it), in order with the next.
func TestDemuxSkipsAndAcknowledgesOversizedQoS1(t *testing.T) {
	var wire, acks bytes.Buffer
	wire.Write(encode(t, pubPacket("big", bytes.Repeat([]byte("x"), 2000), 1, false, 5)))
	wire.Write(encode(t, pubPacket("small", []byte("ok"), 1, false, 6)))
	var got []Message
	var skipped []string
	c := newDemuxConn(pipeConn{r: iotestOneByte(&wire), w: &acks}, inbound{deliver: func(m Message) { got = append(got, m) },
		max: 1024, oversized: func(topic string, size int) { skipped = append(skipped, fmt.Sprint(topic, size)) }})
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read = %v, want EOF", err)
	}
	if len(got) != 1 || got[0].Topic != "small" || fmt.Sprint(skipped) != "[big2007]" {
		t.Fatalf("delivered %v, skipped %v", got, skipped)
	}
	if want := []byte{0x40, 2, 0, 5, 0x40, 2, 0, 6}; !bytes.Equal(acks.Bytes(), want) {
		t.Fatalf("the connection wrote % x, want % x", acks.Bytes(), want)
	}
}

// TestOversizedIsSkippedAndCounted: through a real broker, a QoS 0 or 1
// message over MaxMessageBytes reaches no handler and is counted; those
// within the bound, before and after it, arrive in order.
func TestOversizedIsSkippedAndCounted(t *testing.T) {
	for _, qos := range []byte{0, 1} {
		t.Run(fmt.Sprint("qos", qos), func(t *testing.T) { oversized(t, qos) })
	}
}

func oversized(t *testing.T, qos byte) {
	b := startBroker(t, "127.0.0.1:0")
	c := dialWith(t, Options{Broker: b.URL(), MaxMessageBytes: 1024})
	var in inbox
	if err := c.Subscribe("big/#", qos, in.handle); err != nil {
		t.Fatal(err)
	}
	pub := dial(t, b.URL())
	for _, p := range []struct {
		topic string
		size  int
	}{{"big/a", 10}, {"big/huge", 200 << 10}, {"big/b", 1000}} {
		if err := pub.Publish(ctxT(t), p.topic, bytes.Repeat([]byte("x"), p.size), qos, false); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, 5*time.Second, "the two messages within the bound", func() bool { return len(in.all()) >= 2 })
	got := in.all()
	if len(got) != 2 || got[0].Topic != "big/a" || got[1].Topic != "big/b" || len(got[1].Payload) != 1000 {
		t.Fatalf("delivered %d messages: %v", len(got), got)
	}
	if d := c.Delivery(); d.Oversized != 1 {
		t.Fatalf("Delivery().Oversized = %d, want 1", d.Oversized)
	}
}

// TestUnreadShowsTheBacklog: a handler that stops taking messages lets
// them pile up in the connection; Unread (and Delivery) shows those bytes,
// and they drain once the handler goes on.
func TestUnreadShowsTheBacklog(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	c := dialWith(t, Options{Broker: b.URL(), QueueSize: 8, StallLimit: time.Minute})
	gate := make(chan struct{})
	var n atomic.Int64
	if err := c.Subscribe("load/#", 0, func(Message) { <-gate; n.Add(1) }); err != nil {
		t.Fatal(err)
	}
	pub := dial(t, b.URL())
	const msgs = 3000
	payload := bytes.Repeat([]byte("x"), 1000)
	go func() {
		for range msgs {
			_ = pub.Publish(context.Background(), "load/1", payload, 0, false)
		}
	}()
	waitFor(t, 10*time.Second, "a backlog of 64 KiB unread", func() bool { return c.Unread() >= 64<<10 })
	if d := c.Delivery(); d.Unread < 64<<10 {
		t.Fatalf("Delivery().Unread = %d", d.Unread)
	}
	close(gate)
	waitFor(t, 20*time.Second, "every message handled", func() bool { return n.Load() == msgs })
	waitFor(t, 5*time.Second, "the backlog to drain", func() bool { return c.Unread() == 0 })
}
