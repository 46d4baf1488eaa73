package mqtt

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/pilothouse/pilothouse/internal/testutil"
)

// willClient is an MQTT 3.1.1 connection with a last will whose TCP
// connection the test can cut without a DISCONNECT, as kill -9 would.
type willClient struct{ conn net.Conn }

// dialWithWill connects as user (anonymous when empty) with a retained
// will on topic; it returns the CONNACK's refusal.
func dialWithWill(t *testing.T, brokerURL, user, pw, topic, payload string) (*willClient, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(brokerURL, "tcp://"), 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	cf := &connectFields{clientID: fmt.Sprintf("will-%s-%d", user, time.Now().UnixNano()), clean: true, keepAlive: 30,
		username: user, password: pw, hasUser: user != "", hasPass: pw != "",
		will: &Will{Topic: topic, Payload: []byte(payload), QoS: 1, Retain: true}}
	if _, err := c.Write(encodeConnect(cf)); err != nil {
		t.Fatal(err)
	}
	p, err := readOne(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	if p.kind != connackType || p.code != 0 {
		c.Close()
		return nil, errors.New(connackReason(p.code))
	}
	_ = c.SetDeadline(time.Time{})
	t.Cleanup(func() { _, _ = c.Write(disconnect); c.Close() })
	return &willClient{conn: c}, nil
}

// cut ends the TCP connection without a DISCONNECT: the broker must then
// publish the will.
func (w *willClient) cut() { _ = w.conn.Close() }

// TestBrokerChecksWillsAtConnect: a last will is a publish the broker
// makes for the client later, unchecked by mochi. A will whose topic the
// user may not write, or that is no valid topic name ($SYS, wildcards), is
// refused at CONNECT with "not authorized" (as Mosquitto does), counted
// and logged; an allowed will is published and retained when the
// connection drops (issue 14, item 4).
func TestBrokerChecksWillsAtConnect(t *testing.T) {
	var logs testutil.LockedBuffer
	b, err := StartBroker("127.0.0.1:0", quietLogger(), WithAuthLogger(slog.New(slog.NewTextHandler(&logs, nil))),
		WithBrokerUsers([]BrokerUser{
			{Name: "house", Password: "h0use"},
			{Name: "dash", Password: "dashpass", Write: []string{}},
			{Name: "sensor", Password: "s3nsor", Write: []string{"zigbee2mqtt/+"}},
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	house, err := dialAs(t, b.URL(), "house", "h0use")
	if err != nil {
		t.Fatal(err)
	}
	var all inbox
	if err := house.Subscribe("#", 0, all.handle); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		user, pw, topic string
		refused         string // the CONNACK's refusal, "" when accepted
	}{
		{"dash", "dashpass", "zigbee2mqtt/hall_motion", "not authorized"},
		{"sensor", "s3nsor", "homeassistant/lock/front/config", "not authorized"},
		{"sensor", "s3nsor", "zigbee2mqtt/hall_motion/set", "not authorized"},
		{"house", "h0use", "$SYS/broker/uptime", "not authorized"},
		{"house", "h0use", "zigbee2mqtt/#", "not authorized"},
		{"dash", "wrong", "zigbee2mqtt/hall_motion", "not authorized"},
		{"sensor", "s3nsor", "zigbee2mqtt/sensor_will", ""},
	} {
		payload := fmt.Sprintf(`{"occupancy":true,"case":%d}`, i)
		w, err := dialWithWill(t, b.URL(), tc.user, tc.pw, tc.topic, payload)
		if tc.refused == "" {
			if err != nil {
				t.Fatalf("%s with will %q: %v, want connected", tc.user, tc.topic, err)
			}
			w.cut()
			waitFor(t, 3*time.Second, "the allowed will", func() bool { _, ok := all.find(payload); return ok })
			if got := b.srv.Topics.Messages(tc.topic); len(got) != 1 || string(got[0].Payload) != payload {
				t.Errorf("the allowed retained will is not stored: %v", got)
			}
			continue
		}
		if err == nil {
			w.cut() // show what the broker does with the will
			waitFor(t, 3*time.Second, "a will", func() bool { _, ok := all.find(payload); return ok })
			t.Fatalf("%s connected with a will on %q, and the broker published it (retained: %d)",
				tc.user, tc.topic, len(b.srv.Topics.Messages(tc.topic)))
		}
		if !strings.Contains(err.Error(), tc.refused) {
			t.Errorf("%s with will %q: %v, want %q", tc.user, tc.topic, err, tc.refused)
		}
	}
	if _, ok := all.find(`"case":0`); ok {
		t.Error("a refused will was published")
	}
	if got := b.srv.Topics.Messages("zigbee2mqtt/hall_motion"); len(got) != 0 {
		t.Errorf("a refused will was retained: %v", got)
	}
	if n := b.AuthCounts().RefusedConnects.Load(); n != 6 {
		t.Errorf("RefusedConnects = %d, want 6", n)
	}
	for _, want := range []string{"will topic not writable", "zigbee2mqtt/hall_motion", "invalid will topic", "$SYS/broker/uptime"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the broker's log lacks %q:\n%s", want, logs.String())
		}
	}
}

// TestAnonymousBrokerChecksWillTopics: without broker users (loopback
// only) every client may publish anywhere, but a will is still a publish:
// not on $SYS, not with wildcards.
func TestAnonymousBrokerChecksWillTopics(t *testing.T) {
	b := startBroker(t, "127.0.0.1:0")
	for _, topic := range []string{"$SYS/broker/clients/connected", "a/+/b", "#"} {
		if _, err := dialWithWill(t, b.URL(), "", "", topic, "x"); err == nil {
			t.Errorf("anonymous client connected with a will on %q", topic)
		}
	}
	if _, err := dialWithWill(t, b.URL(), "", "", "clients/lwt", "x"); err != nil {
		t.Errorf("will on clients/lwt: %v", err)
	}
}

// TestBrokerWillRefusedMQTT5: an MQTT 5 client whose will the ACL refuses
// gets CONNACK reason 0x87 "not authorized"; a wrong password still gets
// 0x86 (so the answer does not tell which users exist).
func TestBrokerWillRefusedMQTT5(t *testing.T) {
	b, err := StartBroker("127.0.0.1:0", quietLogger(), WithBrokerUsers([]BrokerUser{{Name: "dash", Password: "dashpass", Write: []string{}}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	for _, tc := range []struct {
		pw   string
		will bool
		want byte
	}{
		{"dashpass", true, packets.ErrNotAuthorized.Code},
		{"wrong", true, packets.ErrBadUsernameOrPassword.Code},
		{"dashpass", false, packets.CodeSuccess.Code},
	} {
		if got := connackV5(t, b.Addr(), "dash", tc.pw, tc.will); got != tc.want {
			t.Errorf("MQTT 5 CONNECT (password %q, will %v): reason %#x, want %#x", tc.pw, tc.will, got, tc.want)
		}
	}
}

// connackV5 sends an MQTT 5 CONNECT, optionally with a will on
// zigbee2mqtt/hall_motion, and returns the CONNACK's reason code.
func connackV5(t *testing.T, addr, user, pw string, will bool) byte {
	t.Helper()
	pk := packets.Packet{FixedHeader: packets.FixedHeader{Type: packets.Connect}, ProtocolVersion: 5,
		Connect: packets.ConnectParams{ProtocolName: []byte("MQTT"), Clean: true, Keepalive: 30, ClientIdentifier: "v5-" + pw,
			UsernameFlag: true, Username: []byte(user), PasswordFlag: true, Password: []byte(pw)}}
	if will {
		pk.Connect.WillFlag, pk.Connect.WillRetain, pk.Connect.WillQos = true, true, 1
		pk.Connect.WillTopic, pk.Connect.WillPayload = "zigbee2mqtt/hall_motion", []byte(`{"occupancy":true}`)
	}
	var buf bytes.Buffer
	if err := pk.ConnectEncode(&buf); err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", addr, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write(buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	head, err := r.ReadByte()
	if err != nil || head>>4 != packets.Connack {
		t.Fatalf("no CONNACK: %#x, %v", head, err)
	}
	if _, err := r.ReadByte(); err != nil { // remaining length (< 128 here)
		t.Fatal(err)
	}
	if _, err := r.ReadByte(); err != nil { // acknowledge flags
		t.Fatal(err)
	}
	code, err := r.ReadByte()
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// dialSession connects as user with a persistent session under clientID
// (MQTT 3.1.1, clean session false), subscribed to filter at QoS 1 (before
// it connects, so that the messages the session queued reach h).
func dialSession(t *testing.T, brokerURL, clientID, user, pw, filter string, h Handler) (*Client, error) {
	t.Helper()
	c, err := newClient(Options{Broker: brokerURL, ClientID: clientID, Username: user, Password: pw, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if err := c.Subscribe(filter, 1, h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c, c.connectFirst(ctx)
}

// TestBrokerSessionBelongsToItsUser: a client id names a session, and a
// session holds what its user subscribed to and the messages queued for
// it. Another user taking that client id over would receive the queued
// messages (mochi resends them without asking the ACL) and would
// disconnect the owner; it is refused ("identifier rejected"), and the
// owner gets its messages.
func TestBrokerSessionBelongsToItsUser(t *testing.T) {
	b, err := StartBroker("127.0.0.1:0", quietLogger(), WithBrokerUsers([]BrokerUser{
		{Name: "house", Password: "h0use"},
		{Name: "dash", Password: "dashpass", Read: []string{"public/#"}, Write: []string{}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	var mu sync.Mutex
	var got []string
	record := func(who string) Handler {
		return func(m Message) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, who+" "+m.Topic+" "+string(m.Payload))
		}
	}
	house, err := dialSession(t, b.URL(), "house-session", "house", "h0use", "secret/#", record("house"))
	if err != nil {
		t.Fatal(err)
	}
	// While house is connected, dash may not kick it off.
	if _, err := dialSession(t, b.URL(), "house-session", "dash", "dashpass", "#", record("dash")); err == nil || !strings.Contains(err.Error(), "identifier rejected") {
		t.Fatalf("dash taking over house's connected session: %v, want identifier rejected", err)
	}
	if !house.Connected() {
		t.Fatal("dash's CONNECT disconnected house")
	}
	house.Close()
	in := b.Inline(quietLogger())
	t.Cleanup(in.Close)
	for i := range 3 {
		if err := in.Publish(ctxT(t), "secret/code", []byte(fmt.Sprint("queued-", i)), 1, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := dialSession(t, b.URL(), "house-session", "dash", "dashpass", "#", record("dash")); err == nil || !strings.Contains(err.Error(), "identifier rejected") {
		t.Errorf("dash taking over house's stored session: %v, want identifier rejected", err)
	}
	if _, err := dialSession(t, b.URL(), "house-session", "house", "h0use", "secret/#", record("house")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "house's queued messages", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 3
	})
	mu.Lock()
	defer mu.Unlock()
	for _, m := range got {
		if !strings.HasPrefix(m, "house ") {
			t.Errorf("a message of house's session went to another user: %s", m)
		}
	}
	if n := b.AuthCounts().RefusedConnects.Load(); n != 2 {
		t.Errorf("RefusedConnects = %d, want 2", n)
	}
}
