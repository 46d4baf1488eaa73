package devices

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// TestCallAsync: over a broker connection a command is acknowledged after
// CallAsync returns, and its Acker hears of it once; refused arguments and
// a lost connection are errors at once, with the Acker never told; over the
// embedded broker's Inline client the command is over when CallAsync
// returns (not pending: the Acker is never told).
func TestCallAsync(t *testing.T) {
	for _, via := range []string{"inline", "tcp"} {
		t.Run(via, func(t *testing.T) {
			var conn mqtt.PubSub
			h := runHouse(t, houseOptions{Options: Options{Logger: quietLogger()}, Conn: func(t *testing.T, b *mqtt.Broker) mqtt.PubSub {
				conn = connectVia(t, b, via)
				return conn
			}})
			c, ctx := h.c, t.Context()
			seen := make(chan mqtt.Message, 8)
			if err := dialTest(t, h.b).Subscribe("zigbee2mqtt/upstairs/lamp/set", 0, func(m mqtt.Message) { seen <- m }); err != nil {
				t.Fatal(err)
			}
			h.send(t, "zigbee2mqtt/bridge/devices", bridgeWithLamp(), true)
			waitEntry(t, c, "upstairs_lamp.set")

			results := make(chan error, 4)
			ack := mqtt.AckFunc(func(err error) { results <- err })
			sent, err := c.CallAsync(ctx, "upstairs_lamp.set", map[string]any{"state": "ON"}, ack)
			if err != nil {
				t.Fatalf("CallAsync = %v", err)
			}
			if via == "inline" {
				if sent.Pending() {
					t.Error("over the Inline client the command is pending after CallAsync returned")
				}
			} else {
				if !sent.Pending() {
					t.Fatal("over a broker connection the command is not pending")
				}
				select {
				case err := <-results:
					if err != nil {
						t.Fatalf("done = %v", err)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("done was not called")
				}
			}
			select {
			case m := <-seen:
				if string(m.Payload) != `{"state":"ON"}` {
					t.Errorf("the broker got %s", m.Payload)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the command did not reach the broker")
			}
			if sent.Pending() {
				sent.Abort(context.Canceled) // after the result: nothing more
			}
			if _, err := c.CallAsync(ctx, "upstairs_lamp.set", map[string]any{"state": "SIDEWAYS"}, ack); err == nil {
				t.Error("refused arguments: no error")
			}
			if via == "tcp" {
				_ = h.b.Close()
				testutil.Eventually(t, waitTime, "the connection to be seen lost", func() bool { return !conn.(*mqtt.Client).Connected() })
				if _, err := c.CallAsync(ctx, "upstairs_lamp.set", map[string]any{"state": "ON"}, ack); !errors.Is(err, mqtt.ErrNotConnected) {
					t.Errorf("disconnected: CallAsync = %v", err)
				}
			}
			select {
			case err := <-results:
				t.Fatalf("done called again, with %v", err)
			case <-time.After(20 * time.Millisecond):
			}
		})
	}
}

// TestCallAsyncMessages: over a broker connection a command of several
// messages reaches the broker whole and in order, the last one
// acknowledged to the Acker.
func TestCallAsyncMessages(t *testing.T) {
	h := runHouse(t, houseOptions{Options: Options{Logger: quietLogger()}, Conn: viaTCP})
	seen := make(chan mqtt.Message, 8)
	if err := dialTest(t, h.b).Subscribe("desk/#", 1, func(m mqtt.Message) { seen <- m }); err != nil {
		t.Fatal(err)
	}
	h.publish(t, messageConfigs[0].topic, messageConfigs[0].payload, "desk.set")
	results := make(chan error, 2)
	args := map[string]any{"state": "ON", "brightness": 100, "color": map[string]any{"r": 1, "g": 2, "b": 3}}
	sent, err := h.c.CallAsync(t.Context(), "desk.set", args, mqtt.AckFunc(func(err error) { results <- err }))
	if err != nil || !sent.Pending() || sent.Topic() != "desk/bri/set" {
		t.Fatalf("CallAsync = %+v, %v", sent, err)
	}
	select {
	case err := <-results:
		if err != nil {
			t.Fatalf("acked %v", err)
		}
	case <-time.After(waitTime):
		t.Fatal("the last message was not acknowledged")
	}
	want := []string{"desk/set ON", "desk/rgb/set 1,2,3", "desk/bri/set 100"}
	for i, w := range want {
		select {
		case m := <-seen:
			if got := m.Topic + " " + string(m.Payload); got != w {
				t.Fatalf("message %d: %s, want %s", i, got, w)
			}
		case <-time.After(waitTime):
			t.Fatalf("message %d (%s) did not reach the broker", i, w)
		}
	}
}
