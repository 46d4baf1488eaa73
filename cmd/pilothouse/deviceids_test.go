package main

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// TestDeviceIDsSurviveRestart: through the real server (embedded broker,
// SQLite), a newcomer with another device's name gets a suffixed id, and
// after a restart in which it is discovered first it keeps that id while
// the original gets its own back (issue 14, item 6).
func TestDeviceIDsSurviveRestart(t *testing.T) {
	cfg := testConfig(t)
	cfg.Demo = false
	config := func(ident, topic string) string {
		return fmt.Sprintf(`{"name":"Temperature","unique_id":"%s_t","state_topic":"%s","device":{"identifiers":["%s"],"name":"Outdoor Weather"}}`, ident, topic, ident)
	}
	const real, evil = "homeassistant/sensor/ws1/t/config", "homeassistant/sensor/aaa/t/config"
	run := func(first, second [2]string) {
		a := startTestApp(t, cfg)
		defer a.stop()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		pub, err := mqtt.Dial(ctx, mqtt.Options{Broker: a.broker.URL(), Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer pub.Close()
		for _, m := range [][2]string{first, second} {
			if err := pub.Publish(ctx, m[0], []byte(m[1]), 1, true); err != nil {
				t.Fatal(err)
			}
		}
		testutil.Eventually(t, 5*time.Second, "both devices", func() bool {
			s := a.devs.Snapshot()
			_, ok1 := s.Get("outdoor_weather.temperature")
			_, ok2 := s.Get("outdoor_weather_2.temperature")
			return ok1 && ok2
		})
		// Retained: the catalog subscribes a state topic on its own
		// goroutine after the entity appears, so a plain publish may
		// come before the subscription and be lost.
		if err := pub.Publish(ctx, "weather/real", []byte("7.5"), 1, true); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 5*time.Second, "the real sensor's value on outdoor_weather", func() bool {
			l, _ := a.devs.Live("outdoor_weather.temperature")
			return fmt.Sprint(l.Value) == "7.5"
		})
	}
	run([2]string{real, config("ws-1", "weather/real")}, [2]string{evil, config("a-evil", "weather/evil")})
	// Restart on the same data folder; the newcomer is discovered first.
	run([2]string{evil, config("a-evil", "weather/evil")}, [2]string{real, config("ws-1", "weather/real")})
}

// stationConfig is a temperature discovery config like the demo weather
// station's, on device ident named name, read from stateTopic.
func stationConfig(uid, stateTopic, ident, name string) string {
	return fmt.Sprintf(`{"name":"Temperature","unique_id":"%s","state_topic":"%s","value_template":"{{ value_json.temperature }}",
		"unit_of_measurement":"°C","device_class":"temperature","device":{"identifiers":["%s"],"name":"%s"}}`, uid, stateTopic, ident, name)
}

// TestDeviceIDsHoldAgainstTwoStepHijack replays the re-test of issue 14,
// item 6 through the real server (embedded broker, SQLite, MCP): (a) a
// config with the station's identifiers and the name "hijack" must not
// re-pin the station's id (nor take its temperature), (b) a newcomer
// named outdoor_weather gets outdoor_weather_2, and its state never fires
// the station's rule; after a restart in which the attacker's configs
// arrive first, all of it holds.
func TestDeviceIDsHoldAgainstTwoStepHijack(t *testing.T) {
	cfg := testConfig(t)
	cfg.Demo = false
	const stationIdent, stationState = "pilothouse_demo_outdoor_weather", "pilothouse-demo/outdoor_weather/state"
	station := [2]string{"homeassistant/sensor/outdoor_weather/temperature/config",
		stationConfig("pilothouse_demo_outdoor_weather_temperature", stationState, stationIdent, "outdoor_weather")}
	join := [2]string{"homeassistant/sensor/evil6/temperature/config", stationConfig("evil6_temp", "evil/6/state", stationIdent, "hijack")}
	newcomer := [2]string{"homeassistant/sensor/evil7/temperature/config", stationConfig("evil7_temp", "evil/7/state", "attacker_station", "outdoor_weather")}
	run := func(deploy bool, configs ...[2]string) {
		a := startTestApp(t, cfg)
		defer a.stop()
		c := mcpClient(t, a.URL()+"/mcp", nil, "")
		pub := dialPub(t, a)
		for _, m := range configs {
			publishT(t, pub, m[0], m[1], true)
		}
		testutil.Eventually(t, 5*time.Second, "outdoor_weather.temperature, outdoor_weather.sensor, outdoor_weather_2.temperature and no device hijack", func() bool {
			s := a.devs.Snapshot()
			_, ok1 := s.Get("outdoor_weather.temperature")
			_, ok2 := s.Get("outdoor_weather.sensor")
			_, ok3 := s.Get("outdoor_weather_2.temperature")
			_, bad := s.Get("hijack")
			return ok1 && ok2 && ok3 && !bad
		})
		if deploy {
			var prog map[string]any
			_ = json.Unmarshal([]byte(`{"name":"weather-rule","triggers":[{"id":"t","state":"outdoor_weather.temperature","below":-50}],
				"steps":[{"id":"v","set":{"cold":true}}]}`), &prog)
			if dep, _ := call(t, c, "pilotage_execute", map[string]any{"language": "automation/1", "program": prog}); dep["outcome"].(map[string]any)["ok"] != true {
				t.Fatalf("deploy: %v", dep)
			}
		}
		a.eng.Flush()
		before := len(weatherFirings(t, c)) // the first run's, after the restart
		// The attacker's states land on the attacker's entries only.
		publishUntil(t, a, pub, "evil/7/state", `{"temperature":-77}`, "outdoor_weather_2.temperature", "-77")
		publishUntil(t, a, pub, "evil/6/state", `{"temperature":-78}`, "outdoor_weather.sensor", "-78")
		if l, _ := a.devs.Live("outdoor_weather.temperature"); l.Value != nil {
			t.Fatalf("the attacker's states moved outdoor_weather.temperature to %v", l.Value)
		}
		a.eng.Flush()
		if f := weatherFirings(t, c); len(f) != before {
			t.Fatalf("the attacker's states fired the station's rule: %v", f)
		}
		// The station's own state fires it.
		if !deploy {
			// After the restart the station's first value is a baseline
			// (issue 31, item 3): the rule fires on crossing below -50.
			publishUntil(t, a, pub, stationState, `{"temperature":-40}`, "outdoor_weather.temperature", "-40")
		}
		publishUntil(t, a, pub, stationState, `{"temperature":-60}`, "outdoor_weather.temperature", "-60")
		testutil.Eventually(t, 5*time.Second, "the station's firing", func() bool { a.eng.Flush(); return len(weatherFirings(t, c)) > before })
	}
	run(true, station, join, newcomer)
	// Restart on the same data folder; the attacker's configs come first.
	run(false, join, newcomer, station)
}

func dialPub(t *testing.T, a *app) *mqtt.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pub, err := mqtt.Dial(ctx, mqtt.Options{Broker: a.broker.URL(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pub.Close)
	return pub
}

func publishT(t *testing.T, pub *mqtt.Client, topic, payload string, retain bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := pub.Publish(ctx, topic, []byte(payload), 1, retain); err != nil {
		t.Fatal(err)
	}
}

// publishUntil publishes payload on topic until id holds want: the catalog
// subscribes to a discovered state topic after it built the device.
func publishUntil(t *testing.T, a *app, pub *mqtt.Client, topic, payload, id, want string) {
	t.Helper()
	i := 0
	testutil.Eventually(t, 5*time.Second, id+" = "+want, func() bool {
		if i%20 == 0 {
			publishT(t, pub, topic, payload, false)
		}
		i++
		l, _ := a.devs.Live(id)
		return fmt.Sprint(l.Value) == want
	})
}

func weatherFirings(t *testing.T, c *client.Client) []any {
	t.Helper()
	rl, _ := call(t, c, "pilothouse_rules", map[string]any{"last_firings": 20})
	for _, r := range rl["rules"].([]any) {
		if rm := r.(map[string]any); rm["name"] == "weather-rule" {
			f, _ := rm["last_firings"].([]any)
			return f
		}
	}
	t.Fatalf("weather-rule is not installed: %v", rl)
	return nil
}
