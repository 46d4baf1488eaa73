package devices

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/mqtt"
)

// haBurst is n retained Home Assistant discovery configs shaped like an
// integration's: three entities per device (temperature, humidity, a
// switch), each device with its identifiers, state and availability
// topics.
func haBurst(n int) []mqtt.Message {
	out := make([]mqtt.Message, 0, n)
	for i := 0; len(out) < n; i++ {
		dev := fmt.Sprintf(`"device":{"identifiers":["burst%05d"],"name":"Burst %05d","manufacturer":"Acme","model":"TH-1"},"availability_topic":"burst/%05d/status"`, i, i, i)
		cfgs := []struct{ topic, payload string }{
			{fmt.Sprintf("homeassistant/sensor/burst%05d/temperature/config", i),
				fmt.Sprintf(`{"name":"Temperature","unique_id":"burst%05d_t","device_class":"temperature","unit_of_measurement":"°C","state_topic":"burst/%05d/state","value_template":"{{ value_json.temperature | float | round(1) }}",%s}`, i, i, dev)},
			{fmt.Sprintf("homeassistant/sensor/burst%05d/humidity/config", i),
				fmt.Sprintf(`{"name":"Humidity","unique_id":"burst%05d_h","device_class":"humidity","unit_of_measurement":"%%","state_topic":"burst/%05d/state","value_template":"{{ value_json.humidity }}",%s}`, i, i, dev)},
			{fmt.Sprintf("homeassistant/switch/burst%05d/relay/config", i),
				fmt.Sprintf(`{"name":"Relay","unique_id":"burst%05d_r","state_topic":"burst/%05d/relay","command_topic":"burst/%05d/relay/set",%s}`, i, i, i, dev)},
		}
		for _, c := range cfgs {
			if len(out) < n {
				out = append(out, mqtt.Message{Topic: c.topic, Payload: []byte(c.payload), Retained: true})
			}
		}
	}
	return out
}

// haDiscoveryCost is the allocations and bytes of one discovery message
// (a changed config of one device) in a catalog of n discovered devices.
func haDiscoveryCost(n int) (allocs, bytes float64) {
	c, _ := newTestCatalog()
	for _, m := range haBurst(3 * n) {
		c.HandleMessage(m)
	}
	a := mqtt.Message{Topic: "homeassistant/sensor/burst00007/temperature/config",
		Payload: []byte(`{"name":"Temperature","unique_id":"burst00007_t","state_topic":"burst/00007/state","unit_of_measurement":"°C","device":{"identifiers":["burst00007"],"name":"Burst 00007"}}`)}
	b := a
	b.Payload = []byte(`{"name":"Temperature","unique_id":"burst00007_t","state_topic":"burst/00007/state","unit_of_measurement":"°F","device":{"identifiers":["burst00007"],"name":"Burst 00007"}}`)
	i := 0
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	allocs = testing.AllocsPerRun(100, func() {
		i++
		if i%2 == 0 {
			c.HandleMessage(a)
		} else {
			c.HandleMessage(b)
		}
	})
	runtime.ReadMemStats(&m1)
	return allocs, float64(m1.TotalAlloc-m0.TotalAlloc) / float64(i)
}

// TestDiscoveryCostFlat: one discovery message costs about the same with
// 300 devices as with 3,000 (it used to rebuild the whole catalog).
func TestDiscoveryCostFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two catalogs")
	}
	a1, b1 := haDiscoveryCost(300)
	a2, b2 := haDiscoveryCost(3000)
	t.Logf("one discovery message: 300 devices %.0f allocs %.0f B; 3,000 devices %.0f allocs %.0f B", a1, b1, a2, b2)
	if a2 > a1*1.25+20 {
		t.Errorf("allocations grow with the catalog: %.0f -> %.0f", a1, a2)
	}
	if b2 > b1*2+8192 {
		t.Errorf("bytes grow with the catalog: %.0f -> %.0f", b1, b2)
	}
}

// BenchmarkHADiscovery is one changed Home Assistant config in a catalog
// of 3,000 devices (9,000 entities).
func BenchmarkHADiscovery(b *testing.B) {
	for _, n := range []int{300, 3000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			c, _ := newTestCatalog()
			for _, m := range haBurst(3 * n) {
				c.HandleMessage(m)
			}
			msgs := haBurst(3)
			alt := msgs[0]
			alt.Payload = []byte(string(alt.Payload[:len(alt.Payload)-1]) + `,"icon":"mdi:x"}`)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%2 == 0 {
					c.HandleMessage(alt)
				} else {
					c.HandleMessage(msgs[0])
				}
			}
		})
	}
}

// TestBurstRetainedConfigs: 7,000 retained discovery configs wait on the
// broker when the catalog subscribes; every entity must arrive, over the
// embedded broker's Inline client and over a TCP connection alike. The
// broker hands retained messages over faster than any handler takes them:
// the delivery queue (1,024) fills, and the subscription holds the
// deliverer back (backpressure, counted in Delivery) instead of dropping
// (issue 17 dropped most of them).
func TestBurstRetainedConfigs(t *testing.T) {
	if testing.Short() {
		t.Skip("7,000 retained messages")
	}
	for _, via := range []string{"inline", "tcp"} {
		t.Run(via, func(t *testing.T) { burstRetained(t, via) })
	}
}

// deliveryConn is a connection that reports its delivery counters.
type deliveryConn interface {
	mqtt.PubSub
	Delivery() mqtt.Delivery
}

func burstRetained(t *testing.T, via string) {
	ctx, b := startBroker(t)
	in := b.Inline(quietLogger())
	t.Cleanup(in.Close)
	burst := haBurst(7000)
	for _, m := range burst {
		if err := in.Publish(ctx, m.Topic, m.Payload, 0, true); err != nil {
			t.Fatal(err)
		}
	}
	var conn deliveryConn = in
	if via == "tcp" {
		conn = dialTest(t, b)
	}
	c := NewCatalog(Options{Logger: quietLogger()})
	t0 := time.Now()
	if err := c.Start(ctx, conn); err != nil {
		t.Fatal(err)
	}
	want := 7000/3*5 + 2 // per device: the device, two sensors, the relay state and action; the last device has one sensor
	deadline := time.Now().Add(60 * time.Second)
	for c.Snapshot().Len() < want && time.Now().Before(deadline) && conn.Delivery().Dropped == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	got, d := c.Snapshot().Len(), conn.Delivery()
	t.Logf("7,000 retained configs: %d of %d entries in %v; the deliverer waited %d times (%v), dropped %d",
		got, want, time.Since(t0).Round(time.Millisecond), d.Backpressured, d.Waited.Round(time.Millisecond), d.Dropped)
	if d.Dropped > 0 || got != want {
		t.Fatalf("entries %d, want %d; the delivery queue dropped %d", got, want, d.Dropped)
	}
}

// TestBurstIngest: the catalog's own work for 7,000 discovery configs, in
// one goroutine as the delivery queue feeds it: every entity arrives and
// the whole burst takes well under the time the old full rebuilds took
// for a fraction of it.
func TestBurstIngest(t *testing.T) {
	if testing.Short() {
		t.Skip("7,000 configs")
	}
	c, _ := newTestCatalog()
	burst := haBurst(7000)
	t0 := time.Now()
	for _, m := range burst {
		c.HandleMessage(m)
	}
	d := time.Since(t0)
	want := 7000/3*5 + 2
	t.Logf("7,000 discovery configs ingested in %v (%v per message), %d entries", d.Round(time.Millisecond), (d / 7000).Round(time.Microsecond), c.Snapshot().Len())
	if got := c.Snapshot().Len(); got != want {
		t.Errorf("entries %d, want %d", got, want)
	}
	checkSnapshot(t, c)
}
