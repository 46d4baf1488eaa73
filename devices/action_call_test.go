package devices

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/mqtt"
)

// TestCallWaitsForItsAcknowledgement: over the embedded broker's Inline
// client and over a broker connection, Call returns once the command
// reached the broker; refused arguments and a lost connection are errors.
func TestCallWaitsForItsAcknowledgement(t *testing.T) {
	for _, via := range []string{"inline", "tcp"} {
		t.Run(via, func(t *testing.T) {
			b, err := mqtt.StartBroker("127.0.0.1:0", quietLogger())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.Close() })
			conn := connectVia(t, b, via)
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			c := NewCatalog(Options{Logger: quietLogger()})
			if err := c.Start(ctx, conn); err != nil {
				t.Fatal(err)
			}
			seen := make(chan mqtt.Message, 8)
			if err := dialTest(t, b).Subscribe("zigbee2mqtt/upstairs/lamp/set", 0, func(m mqtt.Message) { seen <- m }); err != nil {
				t.Fatal(err)
			}
			h := &mqttHouse{b: b, z2m: dialTest(t, b)}
			h.publish(t, "zigbee2mqtt/bridge/devices", bridgeWithLamp(), true)
			waitEntry(t, c, "upstairs_lamp.set")

			if err := c.Call(ctx, "upstairs_lamp.set", map[string]any{"state": "ON"}); err != nil {
				t.Fatalf("Call = %v", err)
			}
			select {
			case m := <-seen:
				if string(m.Payload) != `{"state":"ON"}` {
					t.Errorf("the broker got %s", m.Payload)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the command did not reach the broker")
			}
			if err := c.Call(ctx, "upstairs_lamp.set", map[string]any{"state": "SIDEWAYS"}); err == nil {
				t.Error("refused arguments: no error")
			}
			if via == "tcp" {
				_ = b.Close()
				waitFor(t, "the connection to be seen lost", func() bool { return !conn.(*mqtt.Client).Connected() })
				if err := c.Call(ctx, "upstairs_lamp.set", map[string]any{"state": "ON"}); !errors.Is(err, mqtt.ErrNotConnected) {
					t.Errorf("disconnected: Call = %v", err)
				}
			}
		})
	}
}
