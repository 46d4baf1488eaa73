package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestChartsUseTheHouseZoneByDefault: with no time_zone configured, the
// house's zone is the machine's by name, and the device page's charts are
// drawn in it (was: no tz, so the browser's zone, while the text used the
// server's).
func TestChartsUseTheHouseZoneByDefault(t *testing.T) {
	cfg := testConfig(t)
	cfg.TimeZone = ""
	a := startTestApp(t, cfg)
	motion(t, a, true)
	motion(t, a, false)
	a.eng.FlushHistory()
	var body string
	testutil.Eventually(t, 10*time.Second, "the chart data", func() bool {
		resp, err := http.Get(a.URL() + "/devices/hall_motion")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, `id="chart-data"`)
	})
	name := a.eng.Config().TimeZone.String()
	if name == "Local" {
		name = "UTC" // this machine's zone has no name: charts get its offset
	}
	if !strings.Contains(body, `"tz":"`+name+`"`) {
		t.Fatalf("the chart data has no tz %q: %s", name, body[strings.Index(body, `id="chart-data"`):][:300])
	}
}
