package devices

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices/internal/model"
	"github.com/pilothouse/pilothouse/internal/jinja"
	"github.com/pilothouse/pilothouse/mqtt"
)

// benchBridge builds a bridge/devices payload of n sensor devices with 8
// published properties and one settable property each (10 entries/device).
func benchBridge(n int) []byte {
	var devs []map[string]any
	for i := 0; i < n; i++ {
		exposes := []map[string]any{{"type": "binary", "property": "occupancy", "name": "occupancy", "access": 1, "value_on": true, "value_off": false}}
		for _, p := range []string{"temperature", "humidity", "pressure", "battery", "voltage", "illuminance", "linkquality"} {
			exposes = append(exposes, map[string]any{"type": "numeric", "property": p, "name": p, "access": 1, "unit": "x"})
		}
		exposes = append(exposes, map[string]any{"type": "enum", "property": "sensitivity", "name": "sensitivity", "access": 2, "values": []string{"low", "high"}})
		devs = append(devs, map[string]any{"ieee_address": fmt.Sprintf("0x%016x", i), "friendly_name": fmt.Sprintf("room%d/sensor", i), "type": "EndDevice",
			"definition": map[string]any{"vendor": "V", "model": "M", "description": "Bench sensor", "exposes": exposes}})
	}
	b, _ := json.Marshal(devs)
	return b
}

func benchCatalog(b *testing.B, devices int) (*Catalog, []mqtt.Message) {
	c, _ := newTestCatalog()
	c.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bridge/devices", Payload: benchBridge(devices)})
	if got := c.Snapshot().Len(); got != devices*10 {
		b.Fatalf("entries %d, want %d", got, devices*10)
	}
	msgs := make([]mqtt.Message, 0, devices*4)
	for v := 0; v < 4; v++ {
		for i := 0; i < devices; i++ {
			p := fmt.Sprintf(`{"battery":%d,"humidity":%d.5,"illuminance":%d,"linkquality":%d,"occupancy":%t,"pressure":1013.%d,"temperature":21.%d,"voltage":3000}`,
				90+v, 40+v, 100*v, 60+v, v%2 == 0, v, v)
			msgs = append(msgs, mqtt.Message{Topic: fmt.Sprintf("zigbee2mqtt/room%d/sensor", i), Payload: []byte(p)})
		}
	}
	return c, msgs
}

// BenchmarkIngestState measures state ingestion with 5,000 catalog entries
// (500 devices), a subscriber attached, each message a full 8-key state.
func BenchmarkIngestState(b *testing.B) {
	c, msgs := benchCatalog(b, 500)
	var n int
	c.Subscribe(func(Change) { n++ })
	gen := c.Snapshot().Gen
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.HandleMessage(msgs[i%len(msgs)])
	}
	b.StopTimer()
	if c.Snapshot().Gen != gen {
		b.Fatal("state messages changed the catalog generation")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// BenchmarkIngestStateParallel feeds from several goroutines (HandleMessage
// serialises them, as a broker connection would).
func BenchmarkIngestStateParallel(b *testing.B) {
	c, msgs := benchCatalog(b, 500)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			c.HandleMessage(msgs[i%len(msgs)])
			i++
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

func BenchmarkSnapshotGet(b *testing.B) {
	c, _ := benchCatalog(b, 500)
	ids := make([]string, 0, 5000)
	for _, e := range c.Snapshot().Entries() {
		ids = append(ids, e.ID)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := c.Snapshot().Get(ids[i%len(ids)]); !ok {
			b.Fatal("missing")
		}
	}
}

func BenchmarkLive(b *testing.B) {
	c, msgs := benchCatalog(b, 500)
	for _, m := range msgs {
		c.HandleMessage(m)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Live(fmt.Sprintf("room%d_sensor.temperature", i%500))
	}
}

// BenchmarkDiscoveryRebuild is one bridge/devices republication with one
// changed device among 500.
func BenchmarkDiscoveryRebuild(b *testing.B) {
	c, _ := benchCatalog(b, 500)
	p1 := benchBridge(500)
	p2 := []byte(string(p1[:len(p1)-2]) + `,"x":1}]`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p := p1
		if i%2 == 1 {
			p = p2
		}
		c.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bridge/devices", Payload: p})
	}
}

// BenchmarkTemplateWork measures what a million template operations cost
// (ns/Mop), which the work rates of model.WorkBudget are chosen against: a
// burn-style loop rendered with the message's whole budget.
func BenchmarkTemplateWork(b *testing.B) {
	burn := model.CompileTemplate("{% set ns=namespace(c=0) %}{% for i in range(10000) %}{% set ns.c = ns.c + (value_json.v|length) %}{% endfor %}{{ ns.c }}")
	in := jinja.Input{Value: `{"v":"xxxxxxxxxx"}`, JSON: jinja.ValueJSON([]byte(`{"v":"xxxxxxxxxx"}`)), Now: time.Now()}
	spent := 0
	b.ResetTimer()
	for range b.N {
		res, err := burn.Prog.Render(in, model.MsgJBudget)
		if err != nil {
			b.Fatal(err)
		}
		spent += res.Spent
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/(float64(spent)/1e6), "ns/Mop")
}
