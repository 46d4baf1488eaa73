package devices

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pilothouse/pilothouse/internal/testutil"
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

// startCountingHouse is the house with the catalog's connection
// ("inline" or "tcp") counting what it delivers.
func startCountingHouse(t *testing.T, via string) (*house, *countingConn) {
	t.Helper()
	conn := &countingConn{}
	h := runHouse(t, houseOptions{Options: Options{Logger: quietLogger()}, Conn: func(t *testing.T, b *mqtt.Broker) mqtt.PubSub {
		conn.PubSub = connectVia(t, b, via)
		return conn
	}})
	return h, conn
}

// TestCommandsDoNotComeBack: the commands the catalog publishes reach the
// broker's other subscribers but never come back to the catalog as input
// (with Mosquitto's default Nagle, each that came back stalled ~24 ms, and
// each costs a delivery and a parse), over the embedded broker's Inline
// client and over a TCP connection alike.
func TestCommandsDoNotComeBack(t *testing.T) {
	for _, via := range []string{"inline", "tcp"} {
		t.Run(via, func(t *testing.T) {
			h, conn := startCountingHouse(t, via)
			var observed countingConn
			if err := dialTest(t, h.b).Subscribe("zigbee2mqtt/#", 0, observed.wrap(func(mqtt.Message) {})); err != nil {
				t.Fatal(err)
			}
			h.send(t, "zigbee2mqtt/bridge/devices", bridgeWithLamp(), true)
			waitEntry(t, h.c, "upstairs_lamp.set")
			// The lamp's topic is subscribed just after discovery, on the
			// catalog's subscriber goroutine: the sentinel below needs it.
			testutil.Eventually(t, waitTime, "the lamp's topic subscribed", func() bool { return conn.subscribed("zigbee2mqtt/upstairs/lamp") })
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
			h.send(t, "zigbee2mqtt/hall_motion", `{"occupancy":true}`, false)
			h.send(t, "zigbee2mqtt/upstairs/lamp", `{"state":"OFF"}`, false)
			waitLive(t, h.c, "hall_motion.occupancy", true)
			waitLive(t, h.c, "upstairs_lamp.state", "OFF")
			testutil.Eventually(t, waitTime, "the observer to see every command", func() bool { return countSuffix(observed.delivered(), "/set") == 2*n })
			got := conn.delivered()
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

// TestRetainedStateBeforeDiscovery: a device's retained state published
// before the bridge's device list reaches the catalog once the device is
// discovered, whether its topic is under the static filters or subscribed
// after discovery; a device that leaves the list is unsubscribed and its
// topic no longer delivered, and a renamed one is followed.
func TestRetainedStateBeforeDiscovery(t *testing.T) {
	for _, via := range []string{"inline", "tcp"} {
		t.Run(via, func(t *testing.T) {
			h, conn := startCountingHouse(t, via)
			h.send(t, "zigbee2mqtt/hall_motion", `{"occupancy":true,"illuminance":12}`, true)
			h.send(t, "zigbee2mqtt/upstairs/lamp", `{"state":"ON"}`, true)
			h.send(t, "zigbee2mqtt/bridge/devices", bridgeWithLamp(), true)
			waitLive(t, h.c, "hall_motion.illuminance", 12.0)
			waitLive(t, h.c, "upstairs_lamp.state", "ON")

			renamed := strings.Replace(bridgeWithLamp(), `"upstairs/lamp"`, `"attic/lamp"`, 1)
			h.send(t, "zigbee2mqtt/bridge/devices", renamed, true)
			// The new name's topic is subscribed just after discovery.
			testutil.Eventually(t, waitTime, "the renamed lamp's state", func() bool {
				h.send(t, "zigbee2mqtt/attic/lamp", `{"state":"OFF"}`, false)
				return slices.Contains(conn.delivered(), "zigbee2mqtt/attic/lamp")
			})
			before := len(conn.delivered())
			h.send(t, "zigbee2mqtt/upstairs/lamp", `{"state":"OFF"}`, false)
			h.send(t, "zigbee2mqtt/hall_motion", `{"illuminance":13}`, false)
			waitLive(t, h.c, "hall_motion.illuminance", 13.0)
			got := conn.delivered()[before:]
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
	fmt.Println("QoS 0:", strings.Join(c.discoveryFilters(), " "))
	fmt.Println("QoS 1:")
	fmt.Println(strings.Join(c.wantLocked(), "\n"))
	// Output:
	// QoS 0: homeassistant/+/+/config homeassistant/+/+/+/config
	// QoS 1:
	// zigbee2mqtt/+
	// zigbee2mqtt/+/action
	// zigbee2mqtt/+/availability
	// zigbee2mqtt/bridge/devices
	// zigbee2mqtt/bridge/event
	// zigbee2mqtt/bridge/groups
	// zigbee2mqtt/bridge/info
	// zigbee2mqtt/upstairs/lamp
	// zigbee2mqtt/upstairs/lamp/availability
}
