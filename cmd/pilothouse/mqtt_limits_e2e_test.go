package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// mqttHealth is the part of /healthz about MQTT sizes.
type mqttHealth struct {
	Devices struct {
		Refused devices.Refusals `json:"refused"`
	} `json:"devices"`
	Broker *brokerHealth `json:"broker"`
}

func getMQTTHealth(t *testing.T, url string) mqttHealth {
	t.Helper()
	resp, err := http.Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h mqttHealth
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestMQTTSizeBoundsFromConfig: the embedded broker took packets of any
// size and retained them in memory (a 200 MB retained PUBLISH: ~1 GB of
// RSS for good; issue 14 round 2). mqtt.max_message_bytes and
// mqtt.embedded_max_retained_bytes bound them; /healthz counts what was
// refused, and a refused config creates no device.
func TestMQTTSizeBoundsFromConfig(t *testing.T) {
	cfg := testConfig(t)
	if err := parseConfigYAML("pilothouse.yaml", []byte("mqtt:\n  max_message_bytes: 65536\n  embedded_max_retained_bytes: 150000\n"), cfg, nil); err != nil {
		t.Fatal(err)
	}
	cfg.Demo = false
	a := startTestApp(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dial := func() *mqtt.Client {
		c, err := mqtt.Dial(ctx, mqtt.Options{Broker: a.broker.URL(), Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	cfgMsg := func(name string, pad int) []byte {
		return []byte(`{"name":"T","unique_id":"` + name + `_t","state_topic":"s/` + name + `","device":{"identifiers":["` + name +
			`"],"name":"` + name + `"},"icon":"` + strings.Repeat("x", pad) + `"}`)
	}
	_ = dial().Publish(ctx, "homeassistant/sensor/huge/t/config", cfgMsg("huge", 100<<10), 0, true)
	pub := dial()
	for i, name := range []string{"r1", "r2", "r3"} {
		if err := pub.Publish(ctx, "homeassistant/sensor/"+name+"/t/config", cfgMsg(name, 60000), 1, true); err != nil {
			t.Fatalf("config %d: %v", i, err)
		}
	}
	testutil.Eventually(t, 10*time.Second, "the refusals on /healthz", func() bool {
		h := getMQTTHealth(t, a.URL())
		return h.Broker != nil && h.Broker.OversizedPackets == 1 && h.Broker.RetainRefused == 1
	})
	testutil.Eventually(t, 10*time.Second, "the configs under the bound", func() bool {
		_, ok := a.devs.Snapshot().Get("r3")
		return ok
	})
	if _, ok := a.devs.Snapshot().Get("huge"); ok {
		t.Fatal("the oversized config made a device")
	}
	if h := getMQTTHealth(t, a.URL()); h.Broker.RetainedBytes <= 100000 || h.Broker.RetainedBytes > 150000 {
		t.Fatalf("retained bytes %d, want two configs", h.Broker.RetainedBytes)
	}
}

// TestMQTTSizeConfigChecked: the bounds are positive and within MQTT's.
func TestMQTTSizeConfigChecked(t *testing.T) {
	for body, want := range map[string]string{
		"mqtt:\n  max_message_bytes: 0\n":           "must be positive",
		"mqtt:\n  embedded_max_retained_bytes: x\n": "want an integer",
	} {
		_, _, err := loadYAML(t, body)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	c := defaultConfig()
	c.DataDir, c.MaxMessageBytes = t.TempDir(), 1<<30
	if err := c.check(false); err == nil || !strings.Contains(err.Error(), "over MQTT's largest packet") {
		t.Fatalf("check: %v", err)
	}
}
