package web

import (
	"html"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
)

// TestRunPageSaysDeviceWasOffline: a firing's command to a device whose
// availability says offline is published and succeeds, and its run page
// says, at the call and in the narration, that the device was offline.
func TestRunPageSaysDeviceWasOffline(t *testing.T) {
	f := newFixture(t, nil)
	f.devs.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/hall_light/availability", Payload: []byte(`{"state":"offline"}`)})
	f.deploy(nil, motionRule)
	f.motion(true)
	var runs []storage.Run
	testutil.Eventually(t, 5*time.Second, "a firing", func() bool { runs = f.firings("hall-motion-light"); return len(runs) > 0 })
	_, body, _ := f.client().get("/runs/" + runs[0].ID)
	body = html.UnescapeString(body)
	mustContain(t, "the run page", body, "succeeded",
		`"note": "its device hall_light is offline: the command was published but may not reach it"`,
		`Step "on": its device hall_light is offline: the command was published but may not reach it.`)
}
