package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/pilotclient"
)

// TestRealMosquitto runs Pilothouse against the Mosquitto that CI starts
// with deploy/mosquitto/mosquitto.conf (password auth on): the demo
// devices fill the catalog through it, and a rule deployed with the CLI
// fires and its command reaches the broker.
func TestRealMosquitto(t *testing.T) {
	broker := os.Getenv("PILOTHOUSE_TEST_MOSQUITTO")
	if broker == "" {
		t.Skip("PILOTHOUSE_TEST_MOSQUITTO is not set (CI starts Mosquitto; see .ci/run)")
	}
	user, pass := os.Getenv("PILOTHOUSE_TEST_MOSQUITTO_USER"), os.Getenv("PILOTHOUSE_TEST_MOSQUITTO_PASSWORD")
	// The broker really enforces the password (the conf's allow_anonymous false).
	if bad, err := mqtt.Dial(context.Background(), mqtt.Options{Broker: broker, ClientID: "pilothouse-badpw", Username: user,
		Password: pass + "-wrong", Logger: quietLogger()}); err == nil {
		bad.Close()
		t.Fatal("Mosquitto accepted a wrong password")
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	tag := hex.EncodeToString(b[:])

	cfg := testConfig(t)
	cfg.Broker, cfg.MQTTUser, cfg.MQTTPassword = broker, user, pass
	cfg.ClientID = "pilothouse-test-" + tag
	// Own topics, so retained messages of other runs (persistence is on)
	// and concurrent tests cannot interfere.
	cfg.Z2MBase, cfg.HAPrefix = "z2m-"+tag, "ha-"+tag
	cfg.Demo = true
	a := startTestApp(t, cfg)
	if a.broker != nil {
		t.Fatal("an embedded broker was started although --broker was set")
	}
	url := a.URL() + "/mcp"
	c, err := pilotclient.Dial(context.Background(), pilotclient.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testutil.Eventually(t, 15*time.Second, "the demo catalog through Mosquitto", func() bool {
		_, err := c.Get(context.Background(), "hall_light.set")
		_, err2 := c.Get(context.Background(), "outdoor_weather.temperature")
		return err == nil && err2 == nil
	})

	// Watch the light's command topic with the same credentials.
	sub, err := mqtt.Dial(context.Background(), mqtt.Options{Broker: broker, ClientID: "pilothouse-watch-" + tag,
		Username: user, Password: pass, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	var mu sync.Mutex
	var commands []string
	if err := sub.Subscribe(cfg.Z2MBase+"/hall_light/set", 1, func(m mqtt.Message) {
		mu.Lock()
		commands = append(commands, string(m.Payload))
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}

	var out strings.Builder
	if err := runCLI(context.Background(), "apply", []string{writeFile(t, "motion.json", motionLight), "--server", url, "--token", ""},
		&out, &out, strings.NewReader("")); err != nil {
		t.Fatalf("apply: %v\n%s", err, out.String())
	}
	if err := a.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": true}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the hall light command on Mosquitto", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(commands) > 0
	})
	mu.Lock()
	if !strings.Contains(commands[0], `"brightness":180`) {
		t.Errorf("command: %s", commands[0])
	}
	mu.Unlock()
	testutil.Eventually(t, 10*time.Second, "the firing in the rule listing", func() bool {
		a.eng.Flush()
		rs, err := c.Rules(context.Background())
		return err == nil && len(rs) == 1 && len(rs[0].LastFirings) > 0 && rs[0].LastFirings[0].OK
	})
}
