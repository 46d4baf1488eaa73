package mqtt

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// sensorHash is mosquitto_passwd's hash of "door-s3cret" (Mosquitto 2.0,
// PBKDF2-SHA512, 101 iterations).
const sensorHash = "$7$101$G7JLv755jhrvDlXi$mkBibJJZF8TztXyjyLNTFFVb05yQyu1PgLlcMo6EusqCipQIAgOEYv4ike9KJmUksQVvJv1bdmHO177ZoTKO8w=="

// TestBrokerRefusesAnonymousBeyondLoopback: an embedded broker without
// users may only listen on loopback (issue 14, item 4).
func TestBrokerRefusesAnonymousBeyondLoopback(t *testing.T) {
	users := WithBrokerUsers([]BrokerUser{{Name: "u", Password: "p"}})
	for _, tc := range []struct {
		addr    string
		opts    []BrokerOption
		refused bool
	}{
		{"0.0.0.0:0", nil, true},
		{":0", nil, true},
		{"[::]:0", nil, true},
		{"127.0.0.1:0", nil, false},
		{"localhost:0", nil, false},
		{"0.0.0.0:0", []BrokerOption{users}, false},
		{"0.0.0.0:0", []BrokerOption{WithBrokerUsers(nil)}, true},
	} {
		t.Run(tc.addr, func(t *testing.T) {
			b, err := StartBroker(tc.addr, quietLogger(), tc.opts...)
			if b != nil {
				t.Cleanup(func() { _ = b.Close() })
			}
			if !tc.refused {
				if err != nil {
					t.Fatalf("StartBroker(%q) = %v, want started", tc.addr, err)
				}
				return
			}
			if !errors.Is(err, ErrAnonymousListener) || !strings.Contains(err.Error(), "without broker users") {
				t.Fatalf("StartBroker(%q) = %v, want ErrAnonymousListener", tc.addr, err)
			}
		})
	}
}

func dialAs(t *testing.T, url, user, pw string) (*Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, Options{Broker: url, Username: user, Password: pw, Logger: quietLogger()})
	if err == nil {
		t.Cleanup(c.Close)
	}
	return c, err
}

// TestBrokerUsersAndACL: with users configured, anonymous and wrong
// credentials are refused (also on loopback), a plaintext and a
// mosquitto_passwd user get in, and each is held to its topic filters;
// the Inline client needs no credentials.
func TestBrokerUsersAndACL(t *testing.T) {
	b, err := StartBroker("127.0.0.1:0", quietLogger(), WithBrokerUsers([]BrokerUser{
		{Name: "house", Password: "h0use"},
		{Name: "sensor", PasswordHash: sensorHash, Write: []string{"zigbee2mqtt/+"}, Read: []string{"zigbee2mqtt/+/set"}},
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	for _, tc := range []struct{ user, pw string }{{"", ""}, {"house", "wrong"}, {"sensor", "h0use"}, {"nobody", "h0use"}} {
		if _, err := dialAs(t, b.URL(), tc.user, tc.pw); err == nil || !strings.Contains(err.Error(), "broker refused the connection") {
			t.Errorf("CONNECT as %q/%q = %v, want refused", tc.user, tc.pw, err)
		}
	}
	if n := b.AuthCounts().RefusedConnects.Load(); n < 4 {
		t.Errorf("RefusedConnects = %d, want at least 4", n)
	}
	house, err := dialAs(t, b.URL(), "house", "h0use")
	if err != nil {
		t.Fatalf("house: %v", err)
	}
	sensor, err := dialAs(t, b.URL(), "sensor", "door-s3cret")
	if err != nil {
		t.Fatalf("sensor (mosquitto_passwd hash): %v", err)
	}
	inline := b.Inline(quietLogger())
	t.Cleanup(inline.Close)
	var all, sensorIn inbox
	if err := house.Subscribe("#", 0, all.handle); err != nil {
		t.Fatal(err)
	}
	checkSensorWrites(t, b, sensor, &all)
	checkSensorReads(t, b, sensor, house, inline, &sensorIn)
}

// checkSensorWrites: the sensor may publish its state, never a lock's
// discovery config.
func checkSensorWrites(t *testing.T, b *Broker, sensor *Client, all *inbox) {
	t.Helper()
	if err := sensor.Publish(ctxT(t), "homeassistant/lock/front/config", []byte("forged"), 0, true); err != nil {
		t.Fatal(err)
	}
	if err := sensor.Publish(ctxT(t), "zigbee2mqtt/hall_motion", []byte("allowed"), 0, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Second, "the allowed publish", func() bool { _, ok := all.find("allowed"); return ok })
	if _, ok := all.find("forged"); ok {
		t.Error("the ACL let the sensor publish a discovery config")
	}
	if got := b.srv.Topics.Messages("homeassistant/#"); len(got) != 0 {
		t.Errorf("denied retained publish was stored: %v", got)
	}
	if n := b.AuthCounts().DeniedPublishes.Load(); n != 1 {
		t.Errorf("DeniedPublishes = %d, want 1", n)
	}
}

// checkSensorReads: the sensor may subscribe only where its read filters
// reach, and receives only the matching topics.
func checkSensorReads(t *testing.T, b *Broker, sensor, house *Client, inline *Inline, in *inbox) {
	t.Helper()
	if err := sensor.Subscribe("homeassistant/#", 0, in.handle); err == nil || !strings.Contains(err.Error(), "refused by the broker") {
		t.Errorf("sensor subscribing homeassistant/# = %v, want refused", err)
	}
	if err := sensor.Subscribe("zigbee2mqtt/#", 0, in.handle); err != nil {
		t.Fatalf("sensor subscribing zigbee2mqtt/# (overlaps its read filter): %v", err)
	}
	if err := house.Publish(ctxT(t), "zigbee2mqtt/hall_motion", []byte("state-not-for-sensor"), 1, false); err != nil {
		t.Fatal(err)
	}
	if err := inline.Publish(ctxT(t), "zigbee2mqtt/siren/set", []byte("command"), 1, false); err != nil {
		t.Fatalf("inline publish with users configured: %v", err)
	}
	waitFor(t, 3*time.Second, "the command on the sensor's read filter", func() bool { _, ok := in.find("command"); return ok })
	if _, ok := in.find("state-not-for-sensor"); ok {
		t.Error("the sensor received a topic outside its read filters")
	}
	if n := b.AuthCounts().DeniedSubscribes.Load(); n != 1 {
		t.Errorf("DeniedSubscribes = %d, want 1", n)
	}
}

func TestFiltersOverlap(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"a/b", "a/b", true},
		{"a/b", "a/c", false},
		{"a/+", "a/b", true},
		{"a/#", "a", true},
		{"a", "a/#", true},
		{"a/+", "a", false},
		{"#", "x/y/z", true},
		{"zigbee2mqtt/+/set", "zigbee2mqtt/#", true},
		{"zigbee2mqtt/+/set", "homeassistant/#", false},
		{"+/b", "a/+", true},
		{"a/+/c", "a/b/d", false},
		{"#", "$SYS/x", false},
		{"$SYS/#", "$SYS/broker/uptime", true},
		{"+/x", "$SYS/x", false},
	} {
		if got := filtersOverlap(tc.a, tc.b); got != tc.want {
			t.Errorf("filtersOverlap(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
		if got := filtersOverlap(tc.b, tc.a); got != tc.want {
			t.Errorf("filtersOverlap(%q, %q) = %v, want %v", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestBrokerUserChecks(t *testing.T) {
	for _, tc := range []struct {
		users []BrokerUser
		want  string
	}{
		{[]BrokerUser{{Name: "a"}}, "exactly one"},
		{[]BrokerUser{{Name: "a", Password: "p", PasswordHash: sensorHash}}, "exactly one"},
		{[]BrokerUser{{Name: "a", Password: "p"}, {Name: "a", Password: "q"}}, "defined twice"},
		{[]BrokerUser{{Name: "a", PasswordHash: "$6$abc$def"}}, "mosquitto_passwd"},
		{[]BrokerUser{{Name: "a", PasswordHash: "$7$0$G7JLv755jhrvDlXi$mkBi"}}, "iterations"},
		{[]BrokerUser{{Name: "a", Password: "p", Read: []string{"a/#/b"}}}, "invalid topic filter"},
	} {
		if _, err := newAuthUsers(tc.users); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("newAuthUsers(%+v) = %v, want %q", tc.users, err, tc.want)
		}
	}
}
