package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/mqtt"
)

// TestEachDataFolderHasItsOwnClientID: two servers with their own data
// folders on one broker (the demo tried beside a real house) took each
// other's session under the one default id, and lost messages meanwhile.
// Each folder now keeps an id of its own across restarts, and a folder
// from before keeps the old id and so its broker session.
func TestEachDataFolderHasItsOwnClientID(t *testing.T) {
	broker, err := mqtt.StartBroker("127.0.0.1:0", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = broker.Close() })
	external := func(dir string) *Config {
		cfg := testConfig(t)
		cfg.Broker, cfg.Demo = broker.URL(), false
		if dir != "" {
			cfg.DataDir = dir
		}
		return cfg
	}
	idOf := func(a *app) string {
		code, h := getHealth(t, a.URL())
		if code != http.StatusOK || h.MQTT == nil {
			t.Fatalf("healthz: %d %+v", code, h.MQTT)
		}
		return h.MQTT.ClientID
	}
	one := external("")
	first, err := startApp(context.Background(), one, quietLogger(), true)
	if err != nil {
		t.Fatal(err)
	}
	idOne := idOf(first)
	idTwo := idOf(startTestApp(t, external("")))
	if idOne == idTwo || !strings.HasPrefix(idOne, legacyClientID+"-") || !strings.HasPrefix(idTwo, legacyClientID+"-") {
		t.Fatalf("client ids of two folders: %q and %q, want two distinct pilothouse-… ids", idOne, idTwo)
	}
	first.stop()
	if again := idOf(startTestApp(t, external(one.DataDir))); again != idOne {
		t.Errorf("after a restart the folder's id is %q, want %q", again, idOne)
	}

	old := testConfig(t) // a folder from before: its database made on the embedded broker
	embedded, err := startApp(context.Background(), old, quietLogger(), true)
	if err != nil {
		t.Fatal(err)
	}
	embedded.stop()
	if id := idOf(startTestApp(t, external(old.DataDir))); id != legacyClientID {
		t.Errorf("a folder holding a database from before uses %q, want %q (its broker session)", id, legacyClientID)
	}
}
