package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// TestRefusesAnonymousBrokerBeyondLoopback: --broker-listen 0.0.0.0 without
// broker users stops startup with a message that says what to configure
// (issue 14, item 4); with users it starts.
func TestRefusesAnonymousBrokerBeyondLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:1883"} {
		cfg := testConfig(t)
		cfg.BrokerListen = addr
		_, err := startApp(t.Context(), cfg, quietLogger(), true)
		if err == nil || !strings.Contains(err.Error(), "refusing to run the embedded MQTT broker on "+addr+" without authentication") ||
			!strings.Contains(err.Error(), "mqtt.embedded_users") {
			t.Errorf("--broker-listen %s without users: %v", addr, err)
		}
	}
	cfg := testConfig(t)
	cfg.BrokerListen = "0.0.0.0:0"
	cfg.BrokerUsers = []mqtt.BrokerUser{{Name: "z2m", Password: "pw"}}
	a := startTestApp(t, cfg)
	if a.broker == nil {
		t.Fatal("no embedded broker")
	}
}

// TestBrokerUsersFromConfigFile: users from the file guard the embedded
// broker on loopback too, while the demo (the Inline client) still fills the
// catalog.
func TestBrokerUsersFromConfigFile(t *testing.T) {
	t.Setenv("PH_TEST_Z2M_PW", "z2m-secret")
	cfg, warn, err := loadYAML(t, `
mqtt:
  embedded_users:
    - {username: zigbee2mqtt, password_env: PH_TEST_Z2M_PW, write: ["zigbee2mqtt/#"], read: ["zigbee2mqtt/+/set"]}
    - {username: viewer, password: plain-pw, write: []}
`)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(warn, "embedded_users[1].password is a plaintext secret") {
		t.Errorf("no warning for a plaintext password: %q", warn)
	}
	base := testConfig(t)
	base.BrokerUsers = cfg.BrokerUsers
	a := startTestApp(t, base)
	testutil.Eventually(t, 5*time.Second, "the demo devices", func() bool { _, ok := a.devs.Snapshot().Get("hall_motion"); return ok })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tc := range []struct {
		user, pw string
		ok       bool
	}{{"", "", false}, {"zigbee2mqtt", "wrong", false}, {"zigbee2mqtt", "z2m-secret", true}, {"viewer", "plain-pw", true}} {
		c, err := mqtt.Dial(ctx, mqtt.Options{Broker: a.broker.URL(), Username: tc.user, Password: tc.pw, Logger: quietLogger()})
		if (err == nil) != tc.ok {
			t.Errorf("CONNECT as %q: err = %v, want ok=%v", tc.user, err, tc.ok)
		}
		if err == nil {
			c.Close()
		}
	}
}

func TestBrokerUsersConfigErrors(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"no password", "mqtt:\n  embedded_users:\n    - {username: a}\n", "config pilothouse.yaml:3:7: mqtt.embedded_users[0]: set exactly one of password_hash, password_env and password"},
		{"two passwords", "mqtt:\n  embedded_users:\n    - {username: a, password: x, password_env: HOME}\n", "config pilothouse.yaml:3:7: mqtt.embedded_users[0]: set exactly one of password_hash, password_env and password"},
		{"no name", "mqtt:\n  embedded_users:\n    - {password: x}\n", "config pilothouse.yaml:3:7: mqtt.embedded_users[0]: username is required"},
		{"twice", "mqtt:\n  embedded_users:\n    - {username: a, password: x}\n    - {username: a, password: y}\n", `config pilothouse.yaml:4:7: mqtt.embedded_users[1].username: broker user "a" is defined twice`},
		{"bad hash", "mqtt:\n  embedded_users:\n    - {username: a, password_hash: \"$6$x$y\"}\n", `config pilothouse.yaml:3:36: mqtt.embedded_users[0].password_hash: want a mosquitto_passwd hash "$7$<iterations>$<salt>$<hash>" (PBKDF2-SHA512)`},
		{"bad filter", "mqtt:\n  embedded_users:\n    - {username: a, password: x, write: [\"a/#/b\"]}\n", `config pilothouse.yaml:3:42: mqtt.embedded_users[0].write[0]: invalid topic filter "a/#/b"`},
		{"not a list", "mqtt:\n  embedded_users: {username: a}\n", "config pilothouse.yaml:2:19: mqtt.embedded_users: want a list of users, got a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := loadYAML(t, tc.body)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("\n got %v\nwant %s", err, tc.want)
			}
		})
	}
}
