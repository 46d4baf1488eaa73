package engine

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/devices/demo"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
)

// house is a real, in-process Pilothouse without transports: embedded
// broker on a free port, device discovery, the demo devices, SQLite in a
// temp dir and the engine.
type house struct {
	t      *testing.T
	broker *mqtt.Broker
	client *mqtt.Client
	devs   *devices.Catalog
	sim    *demo.Sim
	store  *storage.Store
	eng    *Engine
	dir    string
	cfg    Config
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func newHouse(t *testing.T, cfg Config) *house {
	t.Helper()
	h := withBroker(t, cfg)
	h.client = h.dial(h.broker.URL(), "engine-test", 0)
	h.devs = newCatalog()
	h.listen(h.client)
	h.start()
	h.startSim(h.client)
	h.awaitDemo()
	return h
}

// withBroker is a house with only its embedded broker; the builders add
// the connections, catalog, engine and devices their tests need.
func withBroker(t *testing.T, cfg Config) *house {
	t.Helper()
	h := &house{t: t, dir: t.TempDir(), cfg: cfg}
	var err error
	if h.broker, err = mqtt.StartBroker("127.0.0.1:0", quiet()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.broker.Close() })
	return h
}

// dial connects a client named id to the broker at url until the test
// ends; publishTimeout 0 is the client's default.
func (h *house) dial(url, id string, publishTimeout time.Duration) *mqtt.Client {
	h.t.Helper()
	c, err := mqtt.Dial(context.Background(), mqtt.Options{Broker: url, ClientID: id, Logger: quiet(), PublishTimeout: publishTimeout})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(c.Close)
	return c
}

// newCatalog is a house's catalog before it listens (a new process's).
func newCatalog() *devices.Catalog {
	return devices.NewCatalog(devices.Options{Logger: quiet(), Notify: []devices.NotifyChannel{{ID: "notify.phone", Name: "Phone", Topic: "pilothouse/notify/phone"}}})
}

// listen starts the house's catalog on c.
func (h *house) listen(c *mqtt.Client) {
	h.t.Helper()
	if err := h.devs.Start(context.Background(), c); err != nil {
		h.t.Fatal(err)
	}
}

// startSim starts the demo devices on c until the test ends.
func (h *house) startSim(c *mqtt.Client) {
	h.t.Helper()
	h.sim = demo.New(c, demo.Options{Pace: time.Hour, Logger: quiet()})
	if err := h.sim.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(h.sim.Close)
}

// awaitDemo waits until the house's catalog has every demo device.
func (h *house) awaitDemo() {
	h.t.Helper()
	testutil.Eventually(h.t, 10*time.Second, "demo catalog", func() bool {
		snap := h.devs.Snapshot()
		for _, id := range demoIDs {
			if _, ok := snap.Get(id); !ok {
				return false
			}
		}
		return true
	})
}

// start opens storage and starts the engine (again, for restart tests).
func (h *house) start() {
	var err error
	h.store, err = storage.Open(context.Background(), h.dir)
	if err != nil {
		h.t.Fatal(err)
	}
	h.eng = New(h.cfg, h.devs, h.store, quiet())
	if err := h.eng.Start(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	eng, store := h.eng, h.store
	h.t.Cleanup(func() { eng.Close(); _ = store.Close() })
}

// stop stops the engine and storage (a clean restart).
func (h *house) stop() {
	h.eng.Close()
	_ = h.store.Close()
}

// watch records messages on a topic filter.
type watch struct {
	mu   sync.Mutex
	msgs []mqtt.Message
}

func (h *house) watch(filter string) *watch {
	h.t.Helper()
	w := &watch{}
	c, err := mqtt.Dial(context.Background(), mqtt.Options{Broker: h.broker.URL(), Logger: quiet()})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(c.Close)
	if err := c.Subscribe(filter, 1, func(m mqtt.Message) {
		w.mu.Lock()
		w.msgs = append(w.msgs, m)
		w.mu.Unlock()
	}); err != nil {
		h.t.Fatal(err)
	}
	return w
}

func (w *watch) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.msgs)
}

// topicsSince lists the topics of messages after the first n.
func (w *watch) topicsSince(n int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, m := range w.msgs[n:] {
		out = append(out, m.Topic)
	}
	return out
}

func (w *watch) last() map[string]any {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.msgs) == 0 {
		return nil
	}
	var m map[string]any
	_ = json.Unmarshal(w.msgs[len(w.msgs)-1].Payload, &m)
	return m
}

func (h *house) execute(req ExecuteRequest) *ExecuteResponse {
	h.t.Helper()
	resp, err := h.eng.Execute(context.Background(), req)
	if err != nil {
		h.t.Fatalf("execute: %v", err)
	}
	return resp
}

func (h *house) deploy(program string) *ExecuteResponse {
	h.t.Helper()
	resp := h.execute(ExecuteRequest{Program: json.RawMessage(program)})
	if !resp.Outcome.OK {
		b, _ := json.Marshal(resp)
		h.t.Fatalf("deploy failed: %s", b)
	}
	return resp
}

// redeploy deploys program, replacing the installed rule of its name
// (input.install.replace), and fails the test unless it succeeded.
func (h *house) redeploy(program string) *ExecuteResponse {
	h.t.Helper()
	resp := h.execute(ExecuteRequest{Program: json.RawMessage(program), Input: json.RawMessage(`{"install":{"replace":true}}`)})
	if !resp.Outcome.OK {
		b, _ := json.Marshal(resp)
		h.t.Fatalf("redeploy failed: %s", b)
	}
	return resp
}

// firings returns the stored firings of a rule, newest first.
func (h *house) firings(rule string) []storage.Run {
	h.eng.Flush()
	runs, err := h.store.ListRuns(context.Background(), storage.RunFilter{Rule: rule, Kind: "firing", Limit: 100})
	if err != nil {
		h.t.Fatal(err)
	}
	return runs
}

// demoIDs are entries of every demo device (the catalog is complete when
// all are present).
var demoIDs = []string{"hall_light.set", "porch_light.set", "hall_motion.occupancy", "hall_motion.illuminance",
	"front_door.contact", "front_lock.set", "garage_door.set", "living_plug.power", "living_thermostat.set",
	"bedroom_remote.action", "outdoor_weather.temperature", "outdoor_weather.humidity", "notify.phone"}

// noApproval is a risk-gate policy that needs no approval, for tests of
// other things that deploy locks or notifications (the gate's own tests
// are in approval_test.go).
var noApproval = ApprovalPolicy{Require: []string{}}
