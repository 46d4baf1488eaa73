package main

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// TestHealthzSaysHowLongTheBrokerWasAway (issue 28, item 5): after the
// external broker was unreachable, the server is back within 2 s of it
// and /healthz says when the outage began, how long it lasted, and that
// the session is persistent (under the configured client id).
func TestHealthzSaysHowLongTheBrokerWasAway(t *testing.T) {
	_, proxy := brokerBehindProxy(t)
	cfg := testConfig(t)
	cfg.Broker, cfg.Demo, cfg.ClientID = proxy.URL(), false, "house-outage"
	a := startTestApp(t, cfg)
	healthz := func() (int, health) { return getHealth(t, a.URL()) }
	if code, h := healthz(); code != http.StatusOK || h.MQTT == nil || h.MQTT.LastOutage != nil || !h.MQTT.Persistent || h.MQTT.ClientID != "house-outage" {
		t.Fatalf("healthz before the outage: %d %+v", code, h.MQTT)
	}

	proxy.Down()
	downAt := time.Now()
	testutil.Eventually(t, 5*time.Second, "healthz to report the outage", func() bool {
		code, h := healthz()
		return code == http.StatusServiceUnavailable && strings.HasPrefix(h.Status, "mqtt disconnected: connection to the broker lost ") &&
			h.MQTT.LastOutage != nil && h.MQTT.LastOutage.Ongoing
	})
	time.Sleep(time.Until(downAt.Add(1500 * time.Millisecond))) // the outage's length, not synchronisation
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	upAt := time.Now()
	testutil.Eventually(t, 2*time.Second, "healthz ok within 2 s of the broker being back", func() bool {
		code, _ := healthz()
		return code == http.StatusOK
	})
	t.Logf("healthy %s after the broker was back", time.Since(upAt).Round(time.Millisecond))
	_, h := healthz()
	o := h.MQTT.LastOutage
	if h.MQTT.Outages != 1 || o == nil || o.Ongoing || o.Start.Before(downAt.Add(-time.Second)) || o.Start.After(downAt.Add(time.Second)) ||
		o.Seconds < 1.5 || o.Seconds > 4 || o.Reason == "" {
		t.Fatalf("healthz after the outage: %+v (last outage %+v)", h.MQTT, o)
	}
	if v := a.webHealth(); v.BrokerAway <= 0 || !v.BrokerLostAt.Equal(o.Start) {
		t.Errorf("the web UI's health after the outage: %+v", v)
	}
}

// TestFiringOnAnEventSentWhileAway (issue 28, item 5): a motion event
// Zigbee2MQTT publishes while the server cannot reach the broker is
// queued by the broker for the server's persistent session; once the
// broker is reachable again the rule fires on it, within 2 s.
func TestFiringOnAnEventSentWhileAway(t *testing.T) {
	broker, proxy := brokerBehindProxy(t)
	cfg := testConfig(t)
	cfg.Broker, cfg.Demo = proxy.URL(), true
	a := startTestApp(t, cfg)
	var out strings.Builder
	if err := runCLI(context.Background(), "apply", []string{writeFile(t, "motion.json", motionLight), "--server", a.URL() + "/mcp", "--token", ""},
		&out, &out, strings.NewReader("")); err != nil {
		t.Fatalf("apply: %v\n%s", err, out.String())
	}
	dial := func(id string) *mqtt.Client { // beside the server, straight to the broker
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := mqtt.Dial(ctx, mqtt.Options{Broker: broker.URL(), ClientID: id, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	var commands atomic.Int64
	if err := dial("watch").Subscribe(cfg.Z2MBase+"/hall_light/set", 1, func(mqtt.Message) { commands.Add(1) }); err != nil {
		t.Fatal(err)
	}
	z2m := dial("z2m")

	proxy.Down()
	testutil.Eventually(t, 5*time.Second, "the server to lose the broker", func() bool { return !a.client.Connected() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := z2m.Publish(ctx, cfg.Z2MBase+"/hall_motion", []byte(`{"occupancy":true}`), 1, false); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // the outage's length, not synchronisation
	if commands.Load() != 0 {
		t.Fatal("a command reached the broker during the outage")
	}
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	upAt := time.Now()
	testutil.Eventually(t, 5*time.Second, "the firing on the motion sent during the outage", func() bool { return commands.Load() > 0 })
	took := time.Since(upAt)
	t.Logf("first firing's command %s after the broker was back", took.Round(time.Millisecond))
	if took > 2*time.Second {
		t.Errorf("the first firing came %s after the broker was back, want < 2 s", took)
	}
}
