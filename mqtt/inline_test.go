package mqtt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
)

// TestInlineTalksToTCPClients: the broker's own client sees what TCP
// clients publish (retained first), and they see what it publishes.
func TestInlineTalksToTCPClients(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	dev := dial(t, b.URL())
	ctx := ctxT(t)
	if err := dev.Publish(ctx, "z2m/bridge/devices", []byte(`[1]`), 1, true); err != nil {
		t.Fatal(err)
	}
	in := b.Inline(quietLogger())
	defer in.Close()
	var got inbox
	if err := in.Subscribe("z2m/#", 0, got.handle); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "the retained message", func() bool { m, ok := got.find("[1]"); return ok && m.Retained })
	for i := range 20 {
		if err := dev.Publish(ctx, fmt.Sprintf("z2m/dev%d", i), []byte(fmt.Sprint(i)), 0, false); err != nil {
			t.Fatal(err)
		}
	}
	// (mochi acknowledges a QoS 1 publish before handing it to
	// subscribers: the retained one may also come live, once more)
	states := func() []Message {
		var out []Message
		for _, m := range got.all() {
			if m.Topic != "z2m/bridge/devices" {
				out = append(out, m)
			}
		}
		return out
	}
	waitFor(t, 3*time.Second, "20 state messages", func() bool { return len(states()) == 20 })
	for i, m := range states() {
		if m.Topic != fmt.Sprintf("z2m/dev%d", i) || string(m.Payload) != fmt.Sprint(i) {
			t.Fatalf("message %d out of order: %s %s", i, m.Topic, m.Payload)
		}
	}
	var cmds inbox
	if err := dev.Subscribe("z2m/+/set", 1, cmds.handle); err != nil {
		t.Fatal(err)
	}
	buf := []byte(`{"state":"ON"}`)
	if err := in.Publish(ctx, "z2m/lamp/set", buf, 1, false); err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXXXXXXX") // the caller may reuse its buffer at once
	waitFor(t, 3*time.Second, "the command", func() bool { _, ok := cmds.find(`{"state":"ON"}`); return ok })
	// Its own publishes reach its own subscriptions too.
	if err := in.Publish(ctx, "z2m/self", []byte("me"), 0, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "its own message", func() bool { _, ok := got.find("me"); return ok })
	if err := in.Publish(ctx, "bad/#", nil, 0, false); err == nil {
		t.Fatal("a wildcard topic was published")
	}
	in.Close()
	if err := in.Publish(ctx, "z2m/x", nil, 0, false); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("publish after Close: %v", err)
	}
	if in.Connected() {
		t.Fatal("connected after Close")
	}
}

// TestInlineAfterBrokerClose: commands are refused once the broker is gone.
func TestInlineAfterBrokerClose(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	in := b.Inline(nil)
	defer in.Close()
	if !in.Connected() {
		t.Fatal("not connected")
	}
	_ = b.Close()
	if err := in.Publish(context.Background(), "a/b", nil, 1, false); !errors.Is(err, ErrNotConnected) {
		t.Fatalf("publish after the broker closed: %v", err)
	}
}

// TestInlineRetainedWhileSubscribing exercises retained publishes from TCP
// clients and the inline client while the inline client subscribes (run
// with -race: mochi's retained-message race, see retainGuard).
func TestInlineRetainedWhileSubscribing(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	dev := dial(t, b.URL())
	in := b.Inline(nil)
	defer in.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 200 {
			_ = dev.Publish(context.Background(), fmt.Sprintf("r/%d/x", i%7), []byte("v"), 0, true)
			_ = in.Publish(context.Background(), fmt.Sprintf("r/%d/y", i%5), []byte("w"), 0, true)
		}
	}()
	for i := range 50 {
		var sink inbox
		if err := in.Subscribe(fmt.Sprintf("r/+/%c", "xy"[i%2]), 0, sink.handle); err != nil {
			t.Fatal(err)
		}
	}
	<-done
}

// TestInlineSeesWillsAndLiveRetainFlag: a device's last will (sent by the
// broker when its connection drops, not published by anyone) reaches inline
// subscriptions, and a message delivered to an established subscription is
// live (Retained false) even when it was published with retain, as over TCP.
func TestInlineSeesWillsAndLiveRetainFlag(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	in := b.Inline(quietLogger())
	defer in.Close()
	var got inbox
	if err := in.Subscribe("dev/#", 0, got.handle); err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	connect := packets.Packet{
		FixedHeader:     packets.FixedHeader{Type: packets.Connect},
		ProtocolVersion: 4,
		Connect: packets.ConnectParams{
			ProtocolName: []byte("MQTT"), Clean: true, Keepalive: 30, ClientIdentifier: "plug",
			WillFlag: true, WillTopic: "dev/plug/availability", WillPayload: []byte("offline"), WillRetain: true,
		},
	}
	var buf bytes.Buffer
	if err := connect.ConnectEncode(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	connack := make([]byte, 4)
	if _, err := io.ReadFull(conn, connack); err != nil || connack[0]>>4 != packets.Connack || connack[3] != 0 {
		t.Fatalf("CONNACK %x: %v", connack, err)
	}
	dev := dial(t, b.URL())
	if err := dev.Publish(ctxT(t), "dev/plug/state", []byte("ON"), 1, true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "the live retained publish", func() bool { _, ok := got.find("ON"); return ok })
	if m, _ := got.find("ON"); m.Retained {
		t.Error("a live message to an established subscription has Retained set")
	}
	conn.Close() // dropped without DISCONNECT: the broker sends the will
	waitFor(t, 3*time.Second, "the last will", func() bool { _, ok := got.find("offline"); return ok })
	// A later subscription gets the (retained) will as a retained message.
	var late inbox
	if err := in.Subscribe("dev/plug/availability", 0, late.handle); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "the retained will", func() bool { m, ok := late.find("offline"); return ok && m.Retained })
}
