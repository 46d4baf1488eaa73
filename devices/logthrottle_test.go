package devices

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"time"
)

// TestRepeatedRefusalsLogABoundedNumberOfLines: a publisher repeating a
// bad discovery config gets logBurst lines a window, then one line with
// the count of the rest once the window turns.
func TestRepeatedRefusalsLogABoundedNumberOfLines(t *testing.T) {
	logs := &testutil.LockedBuffer{}
	c, clk := newTestCatalog(func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	for range 500 {
		c.HandleMessage(msg("homeassistant/sensor/bad/config", `{"name": 5}`))
	}
	if n := strings.Count(logs.String(), "invalid discovery config skipped"); n != logBurst {
		t.Fatalf("%d lines for 500 refusals in a window, want %d:\n%s", n, logBurst, logs.String())
	}
	clk.t = clk.t.Add(logWindow + time.Second)
	c.HandleMessage(msg("homeassistant/sensor/bad/config", `{"name": 5}`))
	if got := logs.String(); !strings.Contains(got, "log lines suppressed: 480 more like this in 1m0s") ||
		strings.Count(got, "invalid discovery config skipped") != logBurst+2 { // the summary names the line, and the new window's first
		t.Fatalf("after the window:\n%s", got[max(0, len(got)-600):])
	}
}

// TestDeviceChurnLogsABoundedNumberOfLines: devices that come and go (each
// reserves its id as it leaves) write logBurst lines of a kind a window.
func TestDeviceChurnLogsABoundedNumberOfLines(t *testing.T) {
	logs := &testutil.LockedBuffer{}
	c, _ := newTestCatalog(func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	for i := range 300 {
		topic := fmt.Sprintf("homeassistant/sensor/u%d/config", i)
		c.HandleMessage(msg(topic, fmt.Sprintf(`{"name":"U%d","uniq_id":"u%d","stat_t":"atk/u/%d","dev":{"ids":["udev%d"],"name":"Uniq %d"}}`, i, i, i, i, i)))
		c.HandleMessage(msg(topic, ""))
	}
	if n := strings.Count(logs.String(), "device id reserved for its device"); n != logBurst {
		t.Fatalf("%d lines for 300 devices leaving, want %d", n, logBurst)
	}
}
