package main

import (
	"context"
	"fmt"
	"testing"
	"time"

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
		waitFor(t, 5*time.Second, "both devices", func() bool {
			s := a.devs.Snapshot()
			_, ok1 := s.Get("outdoor_weather.temperature")
			_, ok2 := s.Get("outdoor_weather_2.temperature")
			return ok1 && ok2
		})
		if err := pub.Publish(ctx, "weather/real", []byte("7.5"), 1, false); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "the real sensor's value on outdoor_weather", func() bool {
			l, _ := a.devs.Live("outdoor_weather.temperature")
			return fmt.Sprint(l.Value) == "7.5"
		})
	}
	run([2]string{real, config("ws-1", "weather/real")}, [2]string{evil, config("a-evil", "weather/evil")})
	// Restart on the same data folder; the newcomer is discovered first.
	run([2]string{evil, config("a-evil", "weather/evil")}, [2]string{real, config("ws-1", "weather/real")})
}
