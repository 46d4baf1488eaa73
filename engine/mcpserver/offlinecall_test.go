package mcpserver_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
)

// TestCallToOfflineDeviceSaysSo: a command to a device whose availability
// says offline used to end `success {"published":true}` with no word of
// it. It is still published (the device may be back before its broker
// drops it), and the call's step record says the device is offline, in
// the house's zone, over MCP; a call to an online device is unchanged.
// Both ways a firing sends a call: its last call (not waited for) and a
// call another step follows.
func TestCallToOfflineDeviceSaysSo(t *testing.T) {
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Skip("no zone database:", err)
	}
	s := newHTTPStackCfg(t, engine.Config{TimeZone: tokyo}, storage.Options{})
	c := s.client("")
	bus, err := mqtt.Dial(context.Background(), mqtt.Options{Broker: s.mqtt, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bus.Close)
	offline := regexp.MustCompile(`^its device living_plug is offline \(last heard from (\d\d:\d\d|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d JST)\): the command was published but may not reach it$`)
	const last, followed = `[{"id":"plug","call":"living_plug.set","args":{"state":"ON"}}]`,
		`[{"id":"plug","call":"living_plug.set","args":{"state":"ON"}},{"id":"after","set":{"x":1}}]`
	for i, tc := range []struct {
		name   string
		online bool
		steps  string
	}{
		{"online, the firing's last call", true, last},
		{"offline, the firing's last call", false, last},
		{"offline, a call another step follows", false, followed},
		{"online again, a call another step follows", true, followed},
	} {
		avail := map[bool]string{true: "online", false: "offline"}[tc.online]
		if err := bus.Publish(context.Background(), "zigbee2mqtt/living_plug/availability", []byte(`{"state":"`+avail+`"}`), 1, true); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 5*time.Second, "living_plug "+avail, func() bool {
			l, _ := s.devs.Live("living_plug.state")
			return l.Available != nil && *l.Available == tc.online
		})
		rule := fmt.Sprintf("plug-%d", i)
		deployed(t, c, `{"name":"`+rule+`","triggers":[{"id":"m","state":"hall_motion.occupancy","to":true}],"steps":`+tc.steps+`}`)
		if err := s.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": false}); err != nil {
			t.Fatal(err)
		}
		if err := s.sim.Trigger(context.Background(), "hall_motion", map[string]any{"occupancy": true}); err != nil {
			t.Fatal(err)
		}
		var runID string
		testutil.Eventually(t, 10*time.Second, tc.name+": the firing's trace", func() bool {
			ids := firingsOf(t, c, rule)
			if len(ids) == 0 {
				return false
			}
			runID = ids[0]
			return traceOK(t, c, runID)
		})
		tr := call(t, c, "pilotage_trace", map[string]any{"run_id": runID})
		out, _ := step(tr["trace"], "plug")["output"].(map[string]any)
		note, hasNote := out["note"].(string)
		switch {
		case status(tr) != "success" || out["published"] != true:
			t.Errorf("%s: want a success that published: %s", tc.name, js(tr))
		case tc.online && hasNote:
			t.Errorf("%s: a note on a call to an online device: %q", tc.name, note)
		case !tc.online && !offline.MatchString(note):
			t.Errorf("%s: the call's note %q, want it to say the device is offline (house zone): %s", tc.name, note, js(tr))
		case !tc.online && !strings.Contains(tr["narration"].(string), `Step "plug": `+note+".") || tc.online && strings.Contains(tr["narration"].(string), "offline"):
			t.Errorf("%s: the narration %q, want it to say the note (%q) only then", tc.name, tr["narration"], note)
		}
	}
}
