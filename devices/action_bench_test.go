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
	c := benchLight(b, conn)
	args := map[string]any{"state": "ON", "brightness": 128.0}
	ack := mqtt.AckFunc(func(error) {})
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%1024 == 0 {
			conn.mu.Lock()
			conn.pubs = conn.pubs[:0]
			conn.mu.Unlock()
		}
		if _, err := c.CallAsync(ctx, "hall_light.set", args, ack); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCall is the same command, waited for.
func BenchmarkCall(b *testing.B) {
	conn := newFakeConn()
	c := benchLight(b, conn)
	args := map[string]any{"state": "ON", "brightness": 128.0}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%1024 == 0 {
			conn.mu.Lock()
			conn.pubs = conn.pubs[:0]
			conn.mu.Unlock()
		}
		if err := c.Call(ctx, "hall_light.set", args); err != nil {
			b.Fatal(err)
		}
	}
}
