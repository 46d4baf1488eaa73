package devices

import (
	"context"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/mqtt/mqtttest"
)

// TestEventsSentWhileAwayReachTheCatalog (issue 28, item 5): an event a
// device publishes (QoS 1, not retained) while the catalog's connection
// is down is queued by the broker for the catalog's persistent session
// and reaches the catalog once it is back; with QoS 0 subscriptions the
// broker dropped it.
func TestEventsSentWhileAwayReachTheCatalog(t *testing.T) {
	b, err := mqtt.StartBroker("127.0.0.1:0", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	p := mqtttest.StartFreezeProxy(t, b.Addr())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := mqtt.Dial(ctx, mqtt.Options{Broker: p.URL(), ClientID: "house-away", Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	c := NewCatalog(Options{Logger: quietLogger()})
	if err := c.Start(t.Context(), conn); err != nil {
		t.Fatal(err)
	}
	h := &mqttHouse{b: b, c: c, z2m: dialTest(t, b)}
	h.publish(t, "zigbee2mqtt/bridge/devices", bridgeTwo, true)
	waitEntry(t, c, "hall_motion.occupancy")
	h.publish(t, "zigbee2mqtt/hall_motion", `{"occupancy":false}`, false)
	waitLive(t, c, "hall_motion.occupancy", false)

	p.Down()
	testutil.Eventually(t, 5*time.Second, "the catalog's connection to go down", func() bool { return !conn.Connected() })
	h.publish(t, "zigbee2mqtt/hall_motion", `{"occupancy":true}`, false)
	if err := p.Up(); err != nil {
		t.Fatal(err)
	}
	waitLive(t, c, "hall_motion.occupancy", true)
}
