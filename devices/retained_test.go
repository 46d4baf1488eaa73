package devices

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/mqtt/mqtttest"
)

// TestManyRetainedConfigsOnAStockMosquitto: a house with more retained
// discovery configs than a stock Mosquitto queues for one subscribe
// (max_inflight_messages 20 + max_queued_messages 1000), published at
// QoS 1 as Zigbee2MQTT does, comes up whole: the catalog subscribes
// discovery at QoS 0, as Home Assistant does. At QoS 1 it got 1,020.
func TestManyRetainedConfigsOnAStockMosquitto(t *testing.T) {
	m, ok := mqtttest.StartMosquitto(t)
	if !ok {
		t.Skip("needs Mosquitto (PILOTHOUSE_TEST_MOSQUITTO and _CONF, as CI sets them)")
	}
	dial := func(id string) *mqtt.Client {
		ctx, cancel := context.WithTimeout(context.Background(), waitTime)
		defer cancel()
		c, err := mqtt.Dial(ctx, mqtt.Options{Broker: m.URL(), ClientID: id, Username: m.User, Password: m.Password, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	const n = 1500
	pub := dial("retained-publisher")
	for i := range n {
		cfg := fmt.Sprintf(`{"name":"Door %d","state_topic":"doors/%d","unique_id":"door_%d","device_class":"door"}`, i, i, i)
		if err := pub.Publish(context.Background(), fmt.Sprintf("homeassistant/binary_sensor/door_%d/config", i), []byte(cfg), 1, true); err != nil {
			t.Fatal(err)
		}
	}
	c := NewCatalog(Options{Logger: quietLogger()})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := c.Start(ctx, dial("retained-catalog")); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 60*time.Second, fmt.Sprintf("%d discovered devices", n), func() bool { return c.Coverage().Devices == n })
}
