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
	var p *mqtttest.FreezeProxy
	var conn *mqtt.Client
	h := runHouse(t, houseOptions{Options: Options{Logger: quietLogger()}, Conn: func(t *testing.T, b *mqtt.Broker) mqtt.PubSub {
		p = mqtttest.StartFreezeProxy(t, b.Addr())
		ctx, cancel := context.WithTimeout(context.Background(), waitTime)
		defer cancel()
		var err error
		conn, err = mqtt.Dial(ctx, mqtt.Options{Broker: p.URL(), ClientID: "house-away", Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(conn.Close)
		return conn
	}})
	c := h.c
	h.send(t, "zigbee2mqtt/bridge/devices", bridgeTwo, true)
	waitEntry(t, c, "hall_motion.occupancy")
	h.send(t, "zigbee2mqtt/hall_motion", `{"occupancy":false}`, false)
	waitLive(t, c, "hall_motion.occupancy", false)

	p.Down()
	testutil.Eventually(t, 5*time.Second, "the catalog's connection to go down", func() bool { return !conn.Connected() })
	h.send(t, "zigbee2mqtt/hall_motion", `{"occupancy":true}`, false)
	if err := p.Up(); err != nil {
		t.Fatal(err)
	}
	waitLive(t, c, "hall_motion.occupancy", true)
}
