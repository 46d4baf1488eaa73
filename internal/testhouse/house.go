// Package testhouse is the one test house: a real Pilothouse (embedded
// broker on port 0, discovery, the demo devices, SQLite in a temporary
// folder, the engine and its MCP binding) that tests start with RunHouse
// and talk to with Client and Call.
package testhouse

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/devices/demo"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/helpers"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
)

// Options are what tests vary; the zero value is the demo house with the
// engine's defaults.
type Options struct {
	Engine  engine.Config
	Storage storage.Options
	Devices devices.Options // a nil Logger is a silent one
	Dir     string          // the data folder; "" is a new t.TempDir()
	// Inline connects the house through the broker's inline client instead
	// of a TCP client.
	Inline bool
	// NoDemo leaves the demo devices out: the test announces its own.
	NoDemo bool
	// Seed is what the catalog handles before the engine starts (a
	// house's devices and the states it starts from, not changes).
	Seed []mqtt.Message
}

// demoIDs are the demo catalog entries RunHouse waits for.
var demoIDs = []string{"front_lock.set", "living_plug.set", "hall_light.set", "porch_light.set"}

// House is a running test house; everything stops when the test ends.
type House struct {
	T       testing.TB
	Dir     string
	Broker  *mqtt.Broker
	Conn    mqtt.PubSub // the house's own connection to Broker
	Devices *devices.Catalog
	Store   *storage.Store
	Engine  *engine.Engine
	Helpers *helpers.Manager // the house's helpers (none until a test makes some)
	Sim     *demo.Sim        // nil with NoDemo
	MCP     *mcpserver.Server
}

// Quiet is a logger that drops everything.
func Quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// RunHouse starts a house configured by o and, unless o.NoDemo, waits
// until the demo devices are in its catalog.
func RunHouse(t testing.TB, o Options) *House {
	t.Helper()
	ctx := context.Background()
	h := &House{T: t, Dir: o.Dir}
	if h.Dir == "" {
		h.Dir = t.TempDir()
	}
	var err error
	if h.Broker, err = mqtt.StartBroker("127.0.0.1:0", Quiet()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Broker.Close() })
	h.Conn = h.connect(o.Inline)
	if o.Devices.Logger == nil {
		o.Devices.Logger = Quiet()
	}
	h.Devices = devices.NewCatalog(o.Devices)
	if err := h.Devices.Start(ctx, h.Conn); err != nil {
		t.Fatal(err)
	}
	for _, m := range o.Seed {
		h.Devices.HandleMessage(m)
	}
	if h.Store, err = storage.OpenWith(ctx, h.Dir, o.Storage); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Store.Close() })
	h.Engine = engine.New(o.Engine, h.Devices, h.Store, Quiet())
	h.Helpers = helpers.New(helpers.Options{Catalog: h.Devices, Store: h.Store, Log: Quiet(), Note: h.Engine.HelperNote})
	h.Engine.SetHelpers(h.Helpers)
	if err := h.Engine.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Engine.Close)
	if err := h.Helpers.Start(ctx, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Helpers.Close)
	if !o.NoDemo {
		h.startDemo()
	}
	h.MCP = mcpserver.New(h.Engine, mcpserver.Options{Logger: Quiet()})
	return h
}

// connect dials the house's connection to its broker.
func (h *House) connect(inline bool) mqtt.PubSub {
	if inline {
		c := h.Broker.Inline(Quiet())
		h.T.Cleanup(c.Close)
		return c
	}
	c, err := mqtt.Dial(context.Background(), mqtt.Options{Broker: h.Broker.URL(), Logger: Quiet()})
	if err != nil {
		h.T.Fatal(err)
	}
	h.T.Cleanup(c.Close)
	return c
}

// startDemo starts the demo devices (no spontaneous changes) and waits for
// their catalog entries.
func (h *House) startDemo() {
	h.Sim = demo.New(h.Conn, demo.Options{Pace: time.Hour, Logger: Quiet()})
	if err := h.Sim.Start(context.Background()); err != nil {
		h.T.Fatal(err)
	}
	h.T.Cleanup(h.Sim.Close)
	testutil.Eventually(h.T, 10*time.Second, "the demo catalog", func() bool {
		snap := h.Devices.Snapshot()
		for _, id := range demoIDs {
			if _, ok := snap.Get(id); !ok {
				return false
			}
		}
		return true
	})
}

// ServeHTTP serves the MCP binding's streamable HTTP handler on a local
// listener and returns its /mcp URL.
func (h *House) ServeHTTP(o mcpserver.HTTPOptions) string {
	hs := httptest.NewServer(h.MCP.HTTPHandler(o))
	h.T.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

// InProcess is an initialized mcp-go client talking to the house's MCP
// server in process.
func (h *House) InProcess() *client.Client {
	h.T.Helper()
	c, err := client.NewInProcessClient(h.MCP.MCP)
	if err != nil {
		h.T.Fatal(err)
	}
	return initialize(h.T, c, "")
}
