package web

import (
	"encoding/json"
	"html"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

func (f *fixture) illuminance(lx string) {
	f.t.Helper()
	f.devs.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/hall_motion", Payload: []byte(`{"illuminance":` + lx + `}`)})
	testutil.Eventually(f.t, 5*time.Second, "illuminance "+lx, func() bool {
		l, _ := f.devs.Live("hall_motion.illuminance")
		b, _ := json.Marshal(l.Value)
		return string(b) == lx
	})
	f.e.FlushHistory()
}

// TestOfflineDeviceValuesAreStale: while a device says it is offline its
// page shows the value from before (marked, with since when), not what it
// sent meanwhile; its chart is cut over the offline span; a rule reading
// it says so beside "Next scheduled".
func TestOfflineDeviceValuesAreStale(t *testing.T) {
	f := newFixture(t, nil)
	f.deploy(nil, `{"name": "dark-hall", "triggers": [{"id": "motion", "state": "hall_motion.occupancy", "to": true}],
  "conditions": [{"id": "dark", "expr": "state('hall_motion.illuminance') < 5"}],
  "steps": [{"id": "on", "call": "hall_light.set", "args": {"state": "ON"}}]}`)
	c := f.client()
	f.availability("hall_motion", true)
	f.illuminance("26")
	_, body, _ := c.get("/devices/hall_motion")
	mustContain(t, "online", body, `<td data-dev="hall_motion" data-live="hall_motion.illuminance">26</td>`, `id="stale-note" data-stale-note="hall_motion" hidden>`)

	f.availability("hall_motion", false)
	testutil.Eventually(t, 10*time.Second, "the offline entry in the logbook", func() bool {
		_, body, _ := c.get("/logbook?kind=availability")
		return strings.Contains(body, "hall_motion went offline")
	})
	f.illuminance("99") // sent while offline: rules read none of it
	_, body, _ = c.get("/devices/hall_motion")
	mustContain(t, "offline", body, `<td data-dev="hall_motion" data-live="hall_motion.illuminance" data-stale class="stale">26</td>`,
		"Offline since ", "; rules read no value. Shown: the last values seen before it went offline.",
		"its device was offline 1 time in this range (hatched red)")
	m := chartDataRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no chart data")
	}
	var cd struct {
		To     int64 `json:"to"`
		Charts []struct {
			ID      string     `json:"id"`
			Mean    []*float64 `json:"mean"`
			Offline [][2]int64 `json:"offline"`
		} `json:"charts"`
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(m[1])), &cd); err != nil {
		t.Fatalf("chart data: %v\n%s", err, m[1])
	}
	found := false
	for _, ch := range cd.Charts {
		if ch.ID != "hall_motion.illuminance" {
			continue
		}
		found = true
		if len(ch.Offline) != 1 || ch.Offline[0][1] != cd.To {
			t.Errorf("offline spans %v, want one to the range's end %d", ch.Offline, cd.To)
		}
		for _, v := range ch.Mean {
			if v != nil && *v == 99 {
				t.Errorf("the chart draws the value sent while offline: %v", ch.Mean)
			}
		}
		if n := len(ch.Mean); n == 0 || ch.Mean[n-1] != nil {
			t.Errorf("the line does not end in a gap: %v", ch.Mean)
		}
	}
	if !found {
		t.Fatalf("no illuminance chart: %s", m[1])
	}
	_, body, _ = c.get("/rules/dark-hall")
	mustContain(t, "rule page", body, `data-offline="hall_motion"><a href="/devices/hall_motion">hall_motion</a> is offline since `)

	f.availability("hall_motion", true)
	testutil.Eventually(t, 10*time.Second, "back online", func() bool {
		_, body, _ := c.get("/devices/hall_motion")
		return strings.Contains(body, `<td data-dev="hall_motion" data-live="hall_motion.illuminance">99</td>`)
	})
	_, body, _ = c.get("/rules/dark-hall")
	mustNotContain(t, "rule page, online", body, `data-offline=`)
}
