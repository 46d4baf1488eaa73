package mqtt

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
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

func (p pipeConn) Close() error { return nil }

// iotestOneByte reads one byte at a time, the worst a socket can do.
func iotestOneByte(r io.Reader) io.Reader { return oneByte{r} }

type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func pub(t testing.TB, topic string, payload []byte, qos byte, retain bool, id uint16) []byte {
	t.Helper()
	p, _, err := encodePublish(topic, payload, qos, retain, id)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// readerUnderTest is a client, never connected, whose reading loop the
// test feeds with bytes; its one subscription ("#") records what is
// delivered.
type readerUnderTest struct {
	c   *Client
	got inbox
}

func newReaderUnderTest(t testing.TB, o Options) *readerUnderTest {
	t.Helper()
	o.Broker, o.Logger = "tcp://127.0.0.1:1", quietLogger()
	c, err := newClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	r := &readerUnderTest{c: c}
	fs, err := c.SubscribeSet(2, r.got.handle)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Set([]string{"#"}); err != nil {
		t.Fatal(err)
	}
	return r
}

// read runs the reading loop over wire to its end and returns what the
// loop wrote back and why it stopped.
func (r *readerUnderTest) read(wire io.Reader) ([]byte, error) {
	var out bytes.Buffer
	err := r.c.readPackets(newConn(pipeConn{r: wire, w: &out}, &watchedConn{}))
	return out.Bytes(), err
}

// TestReaderDeliversAndAcknowledges: publishes of every QoS (short, empty,
// retained, one whose remaining length takes 3 bytes) are delivered with
// their topic, payload and retain flag, in order; QoS 1 ones are answered
// with a PUBACK, QoS 2 ones with PUBREC and their PUBREL with PUBCOMP, and
// a QoS 2 one resent before its PUBREL is not delivered twice. A PUBACK
// nobody waits for and a PINGRESP change nothing.
func TestReaderDeliversAndAcknowledges(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 20000)
	dup := pub(t, "q2", []byte("two"), 2, false, 10)
	dup[0] |= dupBit
	var wire bytes.Buffer
	for _, p := range [][]byte{
		pub(t, "zigbee2mqtt/bs1", []byte(`{"seq":1}`), 0, false, 0),
		encodeAck(pubackType, 7),
		pub(t, "a/b", nil, 0, true, 0),
		pub(t, "q1", []byte("one"), 1, false, 9),
		pub(t, "big", big, 0, false, 0),
		{pingrespType << 4, 0},
		pub(t, "q2", []byte("two"), 2, false, 10),
		dup,
		encodeAck(pubrelType, 10),
		pub(t, "q2", []byte("again"), 2, false, 10),
	} {
		wire.Write(p)
	}
	r := newReaderUnderTest(t, Options{})
	acks, err := r.read(iotestOneByte(&wire))
	if err != io.EOF {
		t.Fatalf("after the stream: %v, want EOF", err)
	}
	want := [][]byte{encodeAck(pubackType, 9), encodeAck(pubrecType, 10), encodeAck(pubrecType, 10),
		encodeAck(pubcompType, 10), encodeAck(pubrecType, 10)}
	if w := bytes.Join(want, nil); !bytes.Equal(acks, w) {
		t.Fatalf("the reader wrote % x, want % x", acks, w)
	}
	wantMsgs := []Message{{Topic: "zigbee2mqtt/bs1", Payload: []byte(`{"seq":1}`)}, {Topic: "a/b", Payload: []byte{}, Retained: true},
		{Topic: "q1", Payload: []byte("one")}, {Topic: "big", Payload: big}, {Topic: "q2", Payload: []byte("two")}, {Topic: "q2", Payload: []byte("again")}}
	waitFor(t, 5*time.Second, "every message", func() bool { return len(r.got.all()) >= len(wantMsgs) })
	got := r.got.all()
	if len(got) != len(wantMsgs) {
		t.Fatalf("delivered %d messages, want %d", len(got), len(wantMsgs))
	}
	for i, w := range wantMsgs {
		if got[i].Topic != w.Topic || !bytes.Equal(got[i].Payload, w.Payload) || got[i].Retained != w.Retained || got[i].Payload == nil {
			t.Fatalf("message %d = %q %q retained=%v, want %q %q %v", i, got[i].Topic, got[i].Payload, got[i].Retained, w.Topic, w.Payload, w.Retained)
		}
	}
}

// TestReaderRefusesMalformedPackets: a broken packet is an error (the
// connection is then dropped), never a panic or a message made up.
func TestReaderRefusesMalformedPackets(t *testing.T) {
	for name, tc := range map[string]struct {
		wire []byte
		want string
	}{
		"topic longer than the packet": {[]byte{0x30, 3, 0, 9, 'a'}, "malformed"},
		"QoS 1 without its identifier": {[]byte{0x32, 3, 0, 1, 'a'}, "malformed"},
		"QoS 3":                        {[]byte{0x36, 5, 0, 1, 'a', 0, 1}, "malformed"},
		"no topic length":              {[]byte{0x30, 1, 0}, "malformed"},
		"remaining length of 5 bytes":  {[]byte{0x30, 0x80, 0x80, 0x80, 0x80, 0x01}, "malformed"},
		"body cut short":               {[]byte{0x30, 10, 0, 1, 'a'}, "unexpected EOF"},
		"SUBACK without a code":        {[]byte{0x90, 2, 0, 1}, "malformed"},
		"PINGREQ from the broker":      {[]byte{0xc0, 0}, "unexpected packet"},
		"CONNACK after the handshake":  {[]byte{0x20, 2, 0, 0}, "unexpected packet"},
		"a control packet of 1 MB":     {[]byte{0x90, 0x80, 0x80, 0x40}, "at most"},
	} {
		t.Run(name, func(t *testing.T) {
			r := newReaderUnderTest(t, Options{})
			_, err := r.read(bytes.NewReader(tc.wire))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("read = %v, want an error saying %q", err, tc.want)
			}
			if n := len(r.got.all()); n != 0 {
				t.Fatalf("delivered %d messages", n)
			}
		})
	}
}

// FuzzReadPackets: whatever the broker sends, the reading loop neither
// panics nor makes up bytes, and stops with an error.
func FuzzReadPackets(f *testing.F) {
	f.Add([]byte{0x30, 5, 0, 1, 'a', 'h', 'i', 0x40, 2, 0, 7})
	f.Add([]byte{0x32, 6, 0, 1, 'a', 0, 1, 'x'})
	f.Add([]byte{0x34, 6, 0, 1, 'a', 0, 1, 'x', 0x62, 2, 0, 1})
	f.Add([]byte{0xd0, 0})
	f.Add([]byte{0x90, 3, 0, 1, 0x80, 0xb0, 2, 0, 2})
	f.Fuzz(func(t *testing.T, wire []byte) {
		r := newReaderUnderTest(t, Options{MaxMessageBytes: 64})
		if _, err := r.read(bytes.NewReader(wire)); err == nil {
			t.Fatal("the loop ended without an error")
		}
		for _, m := range r.got.all() {
			if len(m.Topic) > len(wire) || len(m.Payload) > len(wire) {
				t.Fatalf("message larger than the input: %d + %d bytes from %d", len(m.Topic), len(m.Payload), len(wire))
			}
		}
	})
}

// FuzzReadPacket: the codec decodes whatever it is given without
// panicking, within the bound it was given, and what it decodes encodes
// back to a packet that decodes the same.
func FuzzReadPacket(f *testing.F) {
	for _, p := range [][]byte{
		pub(f, "zigbee2mqtt/hall", []byte(`{"occupancy":true}`), 1, true, 0x1234),
		encodeConnect(&connectFields{clientID: "c", clean: true, keepAlive: 10, username: "u", password: "p", hasUser: true, hasPass: true,
			will: &Will{Topic: "w", Payload: []byte("gone"), QoS: 1, Retain: true}}),
		encodeSubscribe(3, []string{"a/#", "b/+/c"}, []byte{0, 1}),
		encodeUnsubscribe(4, []string{"a/#"}),
		{subackType << 4, 4, 0, 3, 0, 0x80},
		{connackType << 4, 2, 1, 0},
		encodeAck(pubrelType, 9),
	} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, wire []byte) {
		p, err := readPacket(bufio.NewReader(bytes.NewReader(wire)), 1024)
		if err != nil {
			return
		}
		again := reencode(p)
		if again == nil {
			return
		}
		q, err := readPacket(bufio.NewReader(bytes.NewReader(again)), 1024)
		if err != nil {
			t.Fatalf("re-encoded % x does not decode: %v", again, err)
		}
		if describe(p) != describe(q) {
			t.Fatalf("decoded %s, re-encoded and decoded %s", describe(p), describe(q))
		}
	})
}

// describe prints what p says (a SUBSCRIBE's flags are fixed by the
// encoder; a CONNECT's fields by value).
func describe(p packet) string {
	s := fmt.Sprintf("type %d id %d topic %q payload %q session %v code %d codes %v filters %q qos %v", p.kind, p.id, p.topic, p.payload,
		p.sessionPresent, p.code, p.codes, p.filters, p.qos)
	if p.kind == publishType {
		s += fmt.Sprintf(" flags %x", p.flags)
	}
	if cf := p.connect; cf != nil {
		s += fmt.Sprintf(" connect %q %v %d %q %q %v %v", cf.clientID, cf.clean, cf.keepAlive, cf.username, cf.password, cf.hasUser, cf.hasPass)
		if cf.will != nil {
			s += fmt.Sprintf(" will %+v", *cf.will)
		}
	}
	return s
}

// reencode encodes p with the codec's encoders (nil for types it has none
// for).
func reencode(p packet) []byte {
	switch p.kind {
	case publishType:
		b, _, _ := encodePublish(p.topic, p.payload, p.pubQoS(), p.flags&retainBit != 0, p.id)
		if b != nil {
			b[0] |= p.flags & dupBit
		}
		return b
	case connectType:
		return encodeConnect(p.connect)
	case subscribeType:
		return encodeSubscribe(p.id, p.filters, p.qos)
	case unsubscribeType:
		return encodeUnsubscribe(p.id, p.filters)
	case pubackType, pubrecType, pubrelType, pubcompType:
		return encodeAck(p.kind, p.id)
	}
	return nil
}

// TestReaderSkipsAndAcknowledgesOversized: a QoS 1 or 2 message over the
// bound is skipped, counted and still acknowledged (the broker would hold
// it in flight, and then the messages after it), in order with the next.
func TestReaderSkipsAndAcknowledgesOversized(t *testing.T) {
	var wire bytes.Buffer
	wire.Write(pub(t, "big", bytes.Repeat([]byte("x"), 2000), 1, false, 5))
	wire.Write(pub(t, "big2", bytes.Repeat([]byte("x"), 2000), 2, false, 6))
	wire.Write(pub(t, "small", []byte("ok"), 1, false, 7))
	r := newReaderUnderTest(t, Options{MaxMessageBytes: 1024})
	acks, err := r.read(iotestOneByte(&wire))
	if err != io.EOF {
		t.Fatalf("read = %v, want EOF", err)
	}
	waitFor(t, 5*time.Second, "the small message", func() bool { return len(r.got.all()) == 1 })
	if got := r.got.all(); got[0].Topic != "small" || r.c.Delivery().Oversized != 2 {
		t.Fatalf("delivered %v, oversized %d", got, r.c.Delivery().Oversized)
	}
	want := bytes.Join([][]byte{encodeAck(pubackType, 5), encodeAck(pubrecType, 6), encodeAck(pubackType, 7)}, nil)
	if !bytes.Equal(acks, want) {
		t.Fatalf("the reader wrote % x, want % x", acks, want)
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

// TestReaderAcknowledgementsCostNoAllocation: the reader takes a PUBACK
// (one for every command sent) without allocating, and a control packet
// bigger than its read buffer (a SUBACK with 40,000 return codes) is still
// read whole and the stream goes on after it.
func TestReaderAcknowledgementsCostNoAllocation(t *testing.T) {
	stream := func(acks int) []byte {
		var wire bytes.Buffer
		for i := range acks {
			wire.Write(encodeAck(pubackType, uint16(i+1)))
			wire.Write([]byte{pingrespType << 4, 0})
		}
		return wire.Bytes()
	}
	r := newReaderUnderTest(t, Options{})
	allocs := func(wire []byte) float64 {
		return testing.AllocsPerRun(5, func() {
			if _, err := r.read(bytes.NewReader(wire)); err != io.EOF {
				t.Fatalf("after the stream: %v, want EOF", err)
			}
		})
	}
	one, many := allocs(stream(1)), allocs(stream(2000))
	if extra := many - one; extra > 20 {
		t.Fatalf("2,000 PUBACKs and PINGRESPs cost %.0f allocations more than one of each, want none per packet", extra)
	}

	codes := bytes.Repeat([]byte{1}, 40000)
	suback := append(appendHeader(nil, subackType<<4, 2+len(codes)), 0, 5)
	wire := append(append(suback, codes...), pub(t, "after", []byte("x"), 0, false, 0)...)
	if _, err := r.read(bytes.NewReader(wire)); err != io.EOF {
		t.Fatalf("after a big SUBACK: %v, want EOF", err)
	}
	waitFor(t, 5*time.Second, "the publish after the SUBACK", func() bool {
		got := r.got.all()
		return len(got) > 0 && got[len(got)-1].Topic == "after"
	})
}
