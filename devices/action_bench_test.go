package devices

import (
	"context"
	"testing"

	"github.com/pilothouse/pilothouse/mqtt"
)

// ackingConn is a fakeConn that is an mqtt.AsyncPublisher acknowledging
// each publish at once, as a broker's PUBACK would.
type ackingConn struct{ *fakeConn }

func (a ackingConn) PublishAsync(ctx context.Context, topic string, payload []byte, qos byte, retain bool, done mqtt.Acker) (func(error), error) {
	if err := a.Publish(ctx, topic, payload, qos, retain); err != nil {
		return nil, err
	}
	done.Acked(nil)
	return func(error) {}, nil
}

// benchLight is a catalog with a Zigbee2MQTT light on conn.
func benchLight(b *testing.B, conn mqtt.PubSub) *Catalog {
	c, _ := newTestCatalog()
	c.mu.Lock()
	c.conn = conn
	c.mu.Unlock()
	c.HandleMessage(msg("zigbee2mqtt/bridge/devices", string(bridgeTwo)))
	if _, ok := c.Snapshot().Get("hall_light.set"); !ok {
		b.Fatal("no hall_light.set")
	}
	return c
}

// BenchmarkCallAsync is a rule's command to a Zigbee2MQTT light, from its
// arguments to the acknowledged publish.
func BenchmarkCallAsync(b *testing.B) {
	conn := ackingConn{newFakeConn()}
	ack := mqtt.AckFunc(func(error) {})
	benchCall(b, benchLight(b, conn), conn.fakeConn, func(c *Catalog, args map[string]any) error {
		_, err := c.CallAsync(context.Background(), "hall_light.set", args, ack)
		return err
	})
}

// BenchmarkCall is the same command, waited for.
func BenchmarkCall(b *testing.B) {
	conn := newFakeConn()
	benchCall(b, benchLight(b, conn), conn, func(c *Catalog, args map[string]any) error {
		return c.Call(context.Background(), "hall_light.set", args)
	})
}

// benchCall runs call b.N times, forgetting conn's publishes every 1,024.
func benchCall(b *testing.B, c *Catalog, conn *fakeConn, call func(*Catalog, map[string]any) error) {
	args := map[string]any{"state": "ON", "brightness": 128.0}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%1024 == 0 {
			conn.mu.Lock()
			conn.pubs = conn.pubs[:0]
			conn.mu.Unlock()
		}
		if err := call(c, args); err != nil {
			b.Fatal(err)
		}
	}
}
