package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/mqtt/mqtttest"
)

func getHealthStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	code, h := getHealth(t, url)
	return code, h.Status
}

// brokerBehindProxy starts an embedded broker and a proxy to it that a
// test can freeze or cut: the server's broker outages.
func brokerBehindProxy(t *testing.T) (*mqtt.Broker, *mqtttest.FreezeProxy) {
	t.Helper()
	broker, err := mqtt.StartBroker("127.0.0.1:0", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Close() })
	return broker, mqtttest.StartFreezeProxy(t, broker.Addr())
}

// TestHealthzReportsFrozenBroker: with the external broker frozen (a proxy
// that stops forwarding), a command's publish returns within the publish
// timeout and /healthz says the broker is not answering, until it answers
// again (issue 14, item 14).
func TestHealthzReportsFrozenBroker(t *testing.T) {
	_, proxy := brokerBehindProxy(t)
	cfg := testConfig(t)
	cfg.Broker, cfg.Demo = proxy.URL(), false
	cfg.publishTimeout = 300 * time.Millisecond
	a := startTestApp(t, cfg)
	if code, status := getHealthStatus(t, a.URL()); code != http.StatusOK || status != "ok" {
		t.Fatalf("healthz before the freeze: %d %q", code, status)
	}
	proxy.Freeze()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a run's deadline
	defer cancel()
	start := time.Now()
	err := a.client.Publish(ctx, "zigbee2mqtt/front_lock/set", []byte(`{"state":"LOCK"}`), 1, false)
	if took := time.Since(start); err == nil || took > 2*time.Second {
		t.Fatalf("publish to the frozen broker: %v after %s", err, took)
	}
	code, status := getHealthStatus(t, a.URL())
	if code != http.StatusServiceUnavailable || !strings.Contains(status, "mqtt broker not answering") || !strings.Contains(status, "zigbee2mqtt/front_lock/set") {
		t.Fatalf("healthz with the broker frozen: %d %q", code, status)
	}
	proxy.Thaw()
	testutil.Eventually(t, 5*time.Second, "healthz ok once the broker answers", func() bool {
		code, _ := getHealthStatus(t, a.URL())
		return code == http.StatusOK
	})
}
