package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/mqtt/mqtttest"
)

// TestHealthzShowsTheLastConnectError: while the broker cannot be
// reached, /healthz says why the last attempt failed and when; after it
// is back, it counts the reconnect. The broker's password never shows.
func TestHealthzShowsTheLastConnectError(t *testing.T) {
	const password = "hunter2-broker-secret"
	broker, err := mqtt.StartBroker("127.0.0.1:0", quietLogger(), mqtt.WithBrokerUsers([]mqtt.BrokerUser{{Name: "house", Password: password}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Close() })
	proxy := mqtttest.StartFreezeProxy(t, broker.Addr())
	cfg := testConfig(t)
	cfg.Broker, cfg.Demo, cfg.MQTTUser, cfg.MQTTPassword = proxy.URL(), false, "house", password
	a := startTestApp(t, cfg)
	raw := func() (int, string) {
		resp, err := http.Get(a.URL() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if _, h := getHealth(t, a.URL()); h.MQTT == nil || h.MQTT.LastConnectError != nil || h.MQTT.Reconnects != 0 {
		t.Fatalf("healthz before the outage: %+v", h.MQTT)
	}
	proxy.Down()
	downAt := time.Now()
	testutil.Eventually(t, 10*time.Second, "healthz to show a failed connection attempt", func() bool {
		_, h := getHealth(t, a.URL())
		return h.MQTT.LastConnectError != nil
	})
	_, h := getHealth(t, a.URL())
	if e := h.MQTT.LastConnectError; e.Error == "" || e.Failed == 0 || e.At.Before(downAt) || time.Since(e.At) > time.Minute {
		t.Fatalf("last connect error: %+v", e)
	}
	if err := proxy.Up(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "healthz ok once the broker is back", func() bool {
		code, _ := getHealth(t, a.URL())
		return code == http.StatusOK
	})
	code, body := raw()
	_, h = getHealth(t, a.URL())
	if code != http.StatusOK || h.MQTT.Reconnects != 1 || h.MQTT.Connects != 2 || h.MQTT.LastConnectError == nil ||
		!strings.Contains(body, `"last_connect_error":{"error":`) || !strings.Contains(body, `"reconnects":1`) || !strings.Contains(body, `"outages":1`) {
		t.Fatalf("healthz after the outage: %d %s", code, body)
	}
	if strings.Contains(body, password) {
		t.Fatalf("healthz shows the broker password: %s", body)
	}
}
