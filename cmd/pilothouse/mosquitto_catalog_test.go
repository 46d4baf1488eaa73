package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// ownMosquitto starts a Mosquitto process the test controls (so it can be
// restarted on the same port). It skips when mosquitto is not installed
// (CI installs it: see .ci/run).
func ownMosquitto(t *testing.T, port int) func() {
	t.Helper()
	bin, err := exec.LookPath("mosquitto")
	if err != nil {
		if _, err2 := os.Stat("/usr/sbin/mosquitto"); err2 != nil {
			t.Skip("mosquitto is not installed (apt-get install mosquitto)")
		}
		bin = "/usr/sbin/mosquitto"
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "mosquitto.conf")
	body := fmt.Sprintf("listener %d 127.0.0.1\nallow_anonymous true\npersistence false\nuser root\n", port)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-c", conf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() }
	t.Cleanup(stop)
	return stop
}

// TestCatalogOverMosquitto: against a real Mosquitto, the demo fills the
// catalog; a rename and a removal move catalog_version and changed_since
// reports exactly those entries; state changes alone leave the version
// alone; and after Mosquitto restarts, state flows again without
// restarting Pilothouse.
func TestCatalogOverMosquitto(t *testing.T) {
	port := freePort(t)
	stop := ownMosquitto(t, port)
	cfg := testConfig(t)
	cfg.Broker = fmt.Sprintf("tcp://127.0.0.1:%d", port)
	a := startTestApp(t, cfg)
	c := mcpClient(t, a.URL()+"/mcp", nil, "")
	lookup := func(args map[string]any) map[string]any {
		args["language"] = "automation/1"
		out, _ := call(t, c, "pilotage_lookup", args)
		return out
	}
	testutil.Eventually(t, 15*time.Second, "the demo catalog through Mosquitto", func() bool {
		return lookup(map[string]any{"verb": "get", "id": "outdoor_weather.humidity"})["entry"] != nil &&
			lookup(map[string]any{"verb": "get", "id": "front_lock.set"})["entry"] != nil
	})
	v0 := lookup(map[string]any{"verb": "list", "limit": 1})["catalog_version"]

	// State only: the version stays.
	if err := a.sim.Trigger(t.Context(), "hall_motion", map[string]any{"illuminance": 4242}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 5*time.Second, "the reading", func() bool {
		live, _ := lookup(map[string]any{"verb": "get", "id": "hall_motion.illuminance"})["live"].(map[string]any)
		return live != nil && live["value"] == float64(4242)
	})
	if v := lookup(map[string]any{"verb": "list", "limit": 1})["catalog_version"]; v != v0 {
		t.Fatal("a sensor reading changed catalog_version")
	}

	// Rename and removal: exactly those changes.
	if err := a.sim.Rename("porch_light", "porch_lamp"); err != nil {
		t.Fatal(err)
	}
	if err := a.sim.Remove("living_plug"); err != nil {
		t.Fatal(err)
	}
	var changes []any
	testutil.Eventually(t, 10*time.Second, "the rename and removal", func() bool {
		got := lookup(map[string]any{"verb": "changed_since", "catalog_version": v0})
		changes, _ = got["changes"].([]any)
		kinds := map[string]string{}
		for _, ch := range changes {
			m := ch.(map[string]any)
			kinds[m["id"].(string)] = m["change"].(string)
		}
		return kinds["porch_lamp.set"] == "added" && kinds["living_plug.set"] == "removed"
	})
	for _, ch := range changes {
		id := ch.(map[string]any)["id"].(string)
		if dev := deviceOfID(id); dev != "porch_light" && dev != "porch_lamp" && dev != "living_plug" {
			t.Errorf("changed_since reports an untouched entry: %v", ch)
		}
	}

	// Mosquitto restarts on the same port: state flows again.
	stop()
	testutil.Eventually(t, 10*time.Second, "the disconnect", func() bool { return !a.client.Connected() })
	ownMosquitto(t, port)
	testutil.Eventually(t, 20*time.Second, "the reconnect", func() bool { return a.client.Connected() })
	testutil.Eventually(t, 10*time.Second, "state after the restart", func() bool {
		_ = a.sim.Trigger(t.Context(), "hall_motion", map[string]any{"illuminance": 99})
		live, _ := lookup(map[string]any{"verb": "get", "id": "hall_motion.illuminance"})["live"].(map[string]any)
		return live != nil && live["value"] == float64(99)
	})
}

func deviceOfID(id string) string {
	for i := 0; i < len(id); i++ {
		if id[i] == '.' {
			return id[:i]
		}
	}
	return id
}
