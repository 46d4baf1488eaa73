// Package testbus is the bus of tests below the engine's test house: an
// embedded broker on port 0, a client that publishes as the bus, and a
// device catalog on it that has read the given retained messages.
package testbus

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// Quiet is a logger that drops everything.
func Quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Start publishes retained on a new broker as client id, starts a
// catalog on the same client and waits until it holds every id of want;
// everything stops when the test ends.
func Start(t testing.TB, id string, retained []mqtt.Message, want ...string) (*devices.Catalog, *mqtt.Client) {
	t.Helper()
	ctx := context.Background()
	broker, err := mqtt.StartBroker("127.0.0.1:0", Quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { broker.Close() })
	c, err := mqtt.Dial(ctx, mqtt.Options{Broker: broker.URL(), ClientID: id, Logger: Quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, m := range retained {
		if err := c.Publish(ctx, m.Topic, m.Payload, 1, true); err != nil {
			t.Fatal(err)
		}
	}
	cat := devices.NewCatalog(devices.Options{Logger: Quiet()})
	if err := cat.Start(ctx, c); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the devices in the catalog", func() bool {
		snap := cat.Snapshot()
		for _, id := range want {
			if _, ok := snap.Get(id); !ok {
				return false
			}
		}
		return true
	})
	return cat, c
}
