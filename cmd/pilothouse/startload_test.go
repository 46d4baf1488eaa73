package main

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// TestHTTPAnswersWhileTheCatalogLoads: with a thousand retained discovery
// configs on the broker, the server answers HTTP while it starts:
// /healthz says "starting: N configs read" (503) until the house is up,
// then ok, and counts the configs.
func TestHTTPAnswersWhileTheCatalogLoads(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t)
	b, err := mqtt.StartBroker("127.0.0.1:0", quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	const configs = 1000
	hostileConfigs(t, b.URL(), configs)
	port := freePort(t)
	cmd := exec.Command(bin, "serve", "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--broker", b.URL(), "--data", t.TempDir(), "--log-level", "error")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _, _ = cmd.Process.Wait() })
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	starting := regexp.MustCompile(`^starting: (\d+) configs read$`)
	most := -1 // the most configs a "starting" answer counted
	testutil.Eventually(t, 60*time.Second, "/healthz ok", func() bool {
		code, status := getHealthOK(url)
		if m := starting.FindStringSubmatch(status); m != nil && code == http.StatusServiceUnavailable {
			n, _ := strconv.Atoi(m[1])
			most = max(most, n)
		}
		if code == http.StatusOK && most < 0 {
			t.Fatalf("/healthz answered ok before it ever said starting")
		}
		return code == http.StatusOK
	})
	if most <= 0 {
		t.Fatalf("no /healthz answer said configs were read while starting (most %d)", most)
	}
	testutil.Eventually(t, 60*time.Second, "every config counted", func() bool {
		_, h := getHealth(t, url)
		return h.Devices.ConfigsRead >= configs
	})
	t.Logf("while starting /healthz said up to %d configs read", most)
}

// hostileConfigs publishes n retained Home Assistant discovery configs on
// b, each a device of its own whose state topic needs a subscription of its
// own and whose template is as costly to compile as the bounds allow.
func hostileConfigs(t *testing.T, url string, n int) {
	t.Helper()
	c, err := mqtt.Dial(context.Background(), mqtt.Options{Broker: url, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tpl := ""
	for i := range 200 {
		tpl += fmt.Sprintf("{%% if value_json.a%d is defined %%}{{ value_json.a%d | float(0) * 2 }}{%% endif %%}", i, i)
	}
	for i := range n {
		cfg := fmt.Sprintf(`{"name":"T","unique_id":"slow_%d","state_topic":"slow/dev%d/state","value_template":%q,"device":{"identifiers":["slow_%d"],"name":"slow %d"}}`, i, i, tpl, i, i)
		if err := c.Publish(context.Background(), fmt.Sprintf("homeassistant/sensor/slow_%d/t/config", i), []byte(cfg), 1, true); err != nil {
			t.Fatal(err)
		}
	}
}
