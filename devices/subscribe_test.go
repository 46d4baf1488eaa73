package devices

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/mqtt"
)

// countingConn counts what a connection delivers to the catalog's handler
// and keeps the filter set the broker last acknowledged.
type countingConn struct {
	mqtt.PubSub
	mu     sync.Mutex
	topics []string
	set    []string
}

// countingSet records a filter set once the broker has acknowledged it.
type countingSet struct {
	mqtt.Filters
	c *countingConn
}

func (s countingSet) Set(filters []string) error {
	err := s.Filters.Set(filters)
	if err == nil {
		s.c.mu.Lock()
		s.c.set = slices.Clone(filters)
		s.c.mu.Unlock()
	}
	return err
}

// subscribed reports whether the last acknowledged set holds filter f.
func (c *countingConn) subscribed(f string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Contains(c.set, f)
}

func (c *countingConn) wrap(h mqtt.Handler) mqtt.Handler {
	return func(m mqtt.Message) {
		c.mu.Lock()
		c.topics = append(c.topics, m.Topic)
		c.mu.Unlock()
		h(m)
	}
}

func (c *countingConn) Subscribe(f string, qos byte, h mqtt.Handler) error {
	return c.PubSub.Subscribe(f, qos, c.wrap(h))
}

func (c *countingConn) SubscribeSet(qos byte, h mqtt.Handler) (mqtt.Filters, error) {
	fs, err := c.PubSub.(mqtt.SetSubscriber).SubscribeSet(qos, c.wrap(h))
	if err != nil {
		return nil, err
	}
	return countingSet{Filters: fs, c: c}, nil
}

func (c *countingConn) delivered() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.topics)
}

// A light whose friendly name has a "/": its topics are subscribed one by
// one, outside the static filters.
const upstairsLamp = `{"ieee_address":"0x04","type":"Router","friendly_name":"upstairs/lamp","supported":true,
  "definition":{"vendor":"IKEA","model":"L1","description":"Bulb","exposes":[
   {"type":"light","features":[{"type":"binary","name":"state","property":"state","access":7,"value_on":"ON","value_off":"OFF"}]}]}}`

func bridgeWithLamp() string { return strings.TrimSuffix(bridgeTwo, "]") + "," + upstairsLamp + "]" }

type mqttHouse struct {
	b    *mqtt.Broker
	c    *Catalog
	conn *countingConn
	z2m  *mqtt.Client // plays Zigbee2MQTT
}

// startMQTTHouse starts a broker, a catalog on the broker's Inline client
// ("inline") or on a TCP Client ("tcp"), and a Zigbee2MQTT client.
func startMQTTHouse(t *testing.T, via string) *mqttHouse {
	t.Helper()
	b, err := mqtt.StartBroker("127.0.0.1:0", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	h := &mqttHouse{b: b, z2m: dialTest(t, b)}
	h.conn = &countingConn{PubSub: connectVia(t, b, via)}
	h.c = NewCatalog(Options{Logger: quietLogger()})
	if err := h.c.Start(ctx, h.conn); err != nil {
		t.Fatal(err)
	}
	return h
}

// connectVia connects to b as the server does: through the embedded
// broker's Inline client ("inline") or over TCP.
func connectVia(t *testing.T, b *mqtt.Broker, via string) mqtt.PubSub {
	t.Helper()
	if via == "inline" {
		in := b.Inline(quietLogger())
		t.Cleanup(in.Close)
		return in
	}
	return dialTest(t, b)
}

func dialTest(t *testing.T, b *mqtt.Broker) *mqtt.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := mqtt.Dial(ctx, mqtt.Options{Broker: b.URL(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func (h *mqttHouse) publish(t *testing.T, topic, payload string, retain bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.z2m.Publish(ctx, topic, []byte(payload), 1, retain); err != nil {
		t.Fatal(err)
	}
}

// waitLive polls until id's live value is want.
func waitLive(t *testing.T, c *Catalog, id string, want any) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if l, ok := c.Live(id); ok && l.Value == want {
			return
		}
		if time.Now().After(deadline) {
			l, _ := c.Live(id)
			t.Fatalf("%s is %v, want %v", id, l.Value, want)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestCommandsDoNotComeBack: the commands the catalog publishes reach the
// broker's other subscribers but never come back to the catalog as input
// (with Mosquitto's default Nagle, each that came back stalled ~24 ms, and
// each costs a delivery and a parse), over the embedded broker's Inline
// client and over a TCP connection alike.
func TestCommandsDoNotComeBack(t *testing.T) {
	for _, via := range []string{"inline", "tcp"} {
		t.Run(via, func(t *testing.T) {
			h := startMQTTHouse(t, via)
			var observed countingConn
			if err := dialTest(t, h.b).Subscribe("zigbee2mqtt/#", 0, observed.wrap(func(mqtt.Message) {})); err != nil {
				t.Fatal(err)
			}
			h.publish(t, "zigbee2mqtt/bridge/devices", bridgeWithLamp(), true)
			waitEntry(t, h.c, "upstairs_lamp.set")
			// The lamp's topic is subscribed just after discovery, on the
			// catalog's subscriber goroutine: the sentinel below needs it.
			waitFor(t, "the lamp's topic subscribed", func() bool { return h.conn.subscribed("zigbee2mqtt/upstairs/lamp") })
			const n = 50
			ctx := context.Background()
			for i := range n {
				for _, id := range []string{"hall_light.set", "upstairs_lamp.set"} {
					if err := h.c.Call(ctx, id, map[string]any{"state": "ON", "brightness": i}); err != nil && id == "hall_light.set" {
						t.Fatal(err)
					} else if err != nil {
						if err := h.c.Call(ctx, id, map[string]any{"state": "ON"}); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			// The sentinels come after the commands at the broker.
			h.publish(t, "zigbee2mqtt/hall_motion", `{"occupancy":true}`, false)
			h.publish(t, "zigbee2mqtt/upstairs/lamp", `{"state":"OFF"}`, false)
			waitLive(t, h.c, "hall_motion.occupancy", true)
			waitLive(t, h.c, "upstairs_lamp.state", "OFF")
			waitFor(t, "the observer to see every command", func() bool { return countSuffix(observed.delivered(), "/set") == 2*n })
			got := h.conn.delivered()
			if sets := countSuffix(got, "/set"); sets != 0 {
				t.Fatalf("%d commands came back to the catalog: %q", sets, got)
			}
			want := []string{"zigbee2mqtt/bridge/devices", "zigbee2mqtt/hall_motion", "zigbee2mqtt/upstairs/lamp"}
			if !slices.Equal(got, want) {
				t.Fatalf("the catalog's handler got %q, want %q", got, want)
			}
		})
	}
}

func countSuffix(topics []string, suffix string) int {
	n := 0
	for _, t := range topics {
		if strings.HasSuffix(t, suffix) {
			n++
		}
	}
	return n
}

func waitEntry(t *testing.T, c *Catalog, id string) {
	t.Helper()
	waitFor(t, "entry "+id, func() bool { _, ok := c.Snapshot().Get(id); return ok })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestRetainedStateBeforeDiscovery: a device's retained state published
// before the bridge's device list reaches the catalog once the device is
// discovered, whether its topic is under the static filters or subscribed
// after discovery; a device that leaves the list is unsubscribed and its
// topic no longer delivered, and a renamed one is followed.
func TestRetainedStateBeforeDiscovery(t *testing.T) {
	for _, via := range []string{"inline", "tcp"} {
		t.Run(via, func(t *testing.T) {
			h := startMQTTHouse(t, via)
			h.publish(t, "zigbee2mqtt/hall_motion", `{"occupancy":true,"illuminance":12}`, true)
			h.publish(t, "zigbee2mqtt/upstairs/lamp", `{"state":"ON"}`, true)
			h.publish(t, "zigbee2mqtt/bridge/devices", bridgeWithLamp(), true)
			waitLive(t, h.c, "hall_motion.illuminance", 12.0)
			waitLive(t, h.c, "upstairs_lamp.state", "ON")

			renamed := strings.Replace(bridgeWithLamp(), `"upstairs/lamp"`, `"attic/lamp"`, 1)
			h.publish(t, "zigbee2mqtt/bridge/devices", renamed, true)
			// The new name's topic is subscribed just after discovery.
			waitFor(t, "the renamed lamp's state", func() bool {
				h.publish(t, "zigbee2mqtt/attic/lamp", `{"state":"OFF"}`, false)
				return slices.Contains(h.conn.delivered(), "zigbee2mqtt/attic/lamp")
			})
			before := len(h.conn.delivered())
			h.publish(t, "zigbee2mqtt/upstairs/lamp", `{"state":"OFF"}`, false)
			h.publish(t, "zigbee2mqtt/hall_motion", `{"illuminance":13}`, false)
			waitLive(t, h.c, "hall_motion.illuminance", 13.0)
			got := h.conn.delivered()[before:]
			got = slices.DeleteFunc(got, func(s string) bool { return s == "zigbee2mqtt/attic/lamp" }) // the polling's
			if !slices.Equal(got, []string{"zigbee2mqtt/hall_motion"}) {
				t.Fatalf("after the rename the catalog got %q", got)
			}
		})
	}
}

func ExampleCatalog_Start_filters() {
	c := NewCatalog(Options{})
	c.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/bridge/devices", Payload: []byte(bridgeWithLamp())})
	c.mu.RLock()
	defer c.mu.RUnlock()
	fmt.Println(strings.Join(c.wantLocked(), "\n"))
	// Output:
	// homeassistant/+/+/+/config
	// homeassistant/+/+/config
	// zigbee2mqtt/+
	// zigbee2mqtt/+/action
	// zigbee2mqtt/+/availability
	// zigbee2mqtt/bridge/devices
	// zigbee2mqtt/bridge/event
	// zigbee2mqtt/upstairs/lamp
	// zigbee2mqtt/upstairs/lamp/availability
}
