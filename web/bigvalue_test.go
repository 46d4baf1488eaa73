package web

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/mqtt"
)

// bigSensors adds n Home Assistant sensors to f's house, each holding a
// string of size bytes (the attacker's 64 sensors of 200 KB each).
func bigSensors(f *fixture, n, size int) {
	f.t.Helper()
	for i := range n {
		f.devs.HandleMessage(mqtt.Message{Topic: fmt.Sprintf("homeassistant/sensor/big%d/config", i),
			Payload: fmt.Appendf(nil, `{"name":"Big %d","state_topic":"big/%d","unique_id":"big%d"}`, i, i, i)})
	}
	for i := range n {
		f.devs.HandleMessage(mqtt.Message{Topic: fmt.Sprintf("big/%d", i), Payload: []byte(strings.Repeat("é", size/2))})
	}
	testutil.Eventually(f.t, 10*time.Second, "the big values", func() bool {
		l, ok := f.e.Live(context.Background(), fmt.Sprintf("big_%d.state", n-1))
		return ok && l.Value != nil
	})
}

// TestBigLiveValuesAreCut: a guest's Devices page and live updates show
// a live value of 200 KB cut at a whole character to maxLiveShown,
// saying so and its size (the page carried every value whole: 12.8 MB
// for 64 such sensors, each request holding about 21 MB).
func TestBigLiveValuesAreCut(t *testing.T) {
	const n, size = 16, 200_000
	f := newFixture(t, testPrincipals())
	bigSensors(f, n, size)
	c := f.client()
	c.login(guestTok)
	lines := openStreamAt(t, c, "/events?devices=1")
	_, body, _ := c.get("/devices")
	t.Logf("the devices page is %d bytes for %d values of %d bytes", len(body), n, size)
	mustContain(t, "devices page", body, `Big 0`, fmt.Sprintf("… (%d bytes)", size))
	if len(body) > n*2*maxLiveShown+256<<10 {
		t.Errorf("the devices page is %d bytes for %d values of %d bytes", len(body), n, size)
	}
	f.devs.HandleMessage(mqtt.Message{Topic: "big/3", Payload: []byte("x" + strings.Repeat("é", size/2))})
	data := until(t, lines, fmt.Sprintf("… (%d bytes)", size+1))
	last := data[len(data)-1]
	if len(last) > maxLiveShown+200 || !strings.Contains(last, `"value":"xéé`) {
		t.Errorf("live update of %d bytes: %.200s", len(last), last)
	}
}

// TestBigValuesCutOnTheDevicePage: the device page shows a 200 KB value
// cut, in its states and in the form that sets it, as the Devices list
// does.
func TestBigValuesCutOnTheDevicePage(t *testing.T) {
	const size = 200_000
	f := newFixture(t, testPrincipals())
	f.devs.HandleMessage(mqtt.Message{Topic: "homeassistant/text/note/config",
		Payload: []byte(`{"name":"Note","state_topic":"note/state","command_topic":"note/set","max":255,"unique_id":"note1","device":{"identifiers":["note"],"name":"Note"}}`)})
	f.devs.HandleMessage(mqtt.Message{Topic: "note/state", Payload: []byte(strings.Repeat("é", size/2))})
	testutil.Eventually(t, 10*time.Second, "the big value", func() bool {
		l, ok := f.e.Live(context.Background(), "note.state")
		return ok && l.Value != nil
	})
	c := f.client()
	c.login(guestTok)
	_, body, _ := c.get("/devices/note")
	t.Logf("the device page is %d bytes for a value of %d bytes", len(body), size)
	mustContain(t, "device page", body, "Note", fmt.Sprintf("… (%d bytes)", size))
	if len(body) > 8*maxLiveShown+256<<10 {
		t.Errorf("the device page is %d bytes for a value of %d bytes", len(body), size)
	}
}
