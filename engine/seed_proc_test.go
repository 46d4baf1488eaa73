package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/devices/demo"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
)

// seedChildEnv carries "<data folder>|<broker URL>" to the house process
// of TestKilledStartKeepsItsSeed.
const seedChildEnv = "PILOTHOUSE_SEED_CHILD"

const doorOpened = `{"name": "door-opened", "mode": "queued",
  "triggers": [{"id": "open", "state": "front_door.contact", "to": false}],
  "steps": [{"id": "on", "call": "porch_light.set", "args": {"state": "ON"}}]}`

// TestKilledStartKeepsItsSeed: the door's opening, its first value
// after a start (a plain message: a retained copy would be a baseline
// whatever was recorded), fires once, even when that process is killed
// (SIGKILL) as soon as the firing's command is on the bus, before the
// history's periodic write: the value that start saw is durable when the
// start is done, so the next start takes the open door as a baseline
// (the same value as recorded, not merely a retained copy) and sends
// nothing.
func TestKilledStartKeepsItsSeed(t *testing.T) {
	ctx := context.Background()
	broker, err := mqtt.StartBroker("127.0.0.1:0", quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Close() })
	client, err := mqtt.Dial(ctx, mqtt.Options{Broker: broker.URL(), ClientID: "seed-parent", Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	var cmds atomic.Int64
	if err := client.Subscribe("zigbee2mqtt/porch_light/set", 1, func(mqtt.Message) { cmds.Add(1) }); err != nil {
		t.Fatal(err)
	}
	sim := demo.New(client, demo.Options{Pace: time.Hour, Logger: quiet()})
	if err := sim.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	if err := sim.Trigger(ctx, "front_door", map[string]any{"contact": true}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	env := seedChildEnv + "=" + dir + "|" + broker.URL()
	store, err := storage.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	// The first process installs the rule and records the closed door.
	first, _ := startChild(t, "TestSeedChild", env)
	testutil.Eventually(t, 15*time.Second, "the closed door in the history", func() bool {
		v, ok, err := store.HistoryBefore(ctx, "front_door.contact", time.Now())
		return err == nil && ok && v.JSON == "true"
	})
	kill(first)

	// Opened: the next start's first value, a plain message, fires, and
	// the start is killed at once.
	door := func(payload string, retain bool) {
		t.Helper()
		if err := client.Publish(ctx, "zigbee2mqtt/front_door", []byte(payload), 1, retain); err != nil {
			t.Fatal(err)
		}
	}
	door("", true) // no retained copy: the start hears the door itself
	stop := make(chan struct{})
	go func() { // until the start listens; the same value again is no change
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				_ = client.Publish(ctx, "zigbee2mqtt/front_door", []byte(`{"contact":false}`), 1, false)
			}
		}
	}()
	second, _ := startChild(t, "TestSeedChild", env)
	testutil.Eventually(t, 15*time.Second, "the first start's command", func() bool { return cmds.Load() >= 1 })
	close(stop)
	kill(second)

	// The start after takes the open door as its baseline.
	door(`{"contact":false}`, true)
	_, lines := startChild(t, "TestSeedChild", env)
	if !containsLine(lines, "first value after the start is a baseline", "front_door.contact") || cmds.Load() != 1 {
		t.Fatalf("after the killed start: %d commands, want 1; the third start logged:\n%s", cmds.Load(), strings.Join(lines, "\n"))
	}
}

func kill(cmd *exec.Cmd) {
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

func containsLine(lines []string, parts ...string) bool {
	for _, l := range lines {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return true
		}
	}
	return false
}

// TestSeedChild is the house process of TestKilledStartKeepsItsSeed
// (skipped otherwise): discovery with the door's state known before the
// engine starts (as cmd/pilothouse starts them), storage on the given
// folder, the engine logging to stdout with the rule deployed once; it
// runs until killed.
func TestSeedChild(t *testing.T) {
	dir, broker, ok := strings.Cut(os.Getenv(seedChildEnv), "|")
	if !ok {
		t.Skip("the house process of TestKilledStartKeepsItsSeed")
	}
	ctx := context.Background()
	c, err := mqtt.Dial(ctx, mqtt.Options{Broker: broker, ClientID: "seed-house", Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	devs := devices.NewCatalog(devices.Options{Logger: quiet()})
	if err := devs.Start(ctx, c); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 10*time.Second, "the demo catalog and the door's state", func() bool {
		_, light := devs.Snapshot().Get("porch_light.set")
		l, _ := devs.Live("front_door.contact")
		return light && l.Value != nil
	})
	store, err := storage.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	eng := New(Config{}, devs, store, slog.New(slog.NewTextHandler(os.Stdout, nil)))
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.GetRule(ctx, "door-opened", 0); err != nil {
		resp, err := eng.Execute(ctx, ExecuteRequest{Program: json.RawMessage(doorOpened)})
		if err != nil || !resp.Outcome.OK {
			t.Fatalf("deploy: %v %+v", err, resp)
		}
	}
	fmt.Println("house ready")
	select {}
}
