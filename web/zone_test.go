package web

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/internal/testhouse"
	"github.com/pilothouse/pilothouse/mqtt"
)

// TestOneZoneEverywhere: a house in another zone than the machine's (and
// the browser's) shows it in the charts (uPlot's tz), the pages' times
// and the logbook.
func TestOneZoneEverywhere(t *testing.T) {
	akl, err := time.LoadLocation("Pacific/Auckland")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	h := testhouse.RunHouse(t, testhouse.Options{NoDemo: true, Engine: engine.Config{TimeZone: akl},
		Seed: []mqtt.Message{{Topic: "zigbee2mqtt/bridge/devices", Payload: []byte(bridge)}}})
	devs, e := h.Devices, h.Engine
	srv := httptest.NewServer(Handler(e, Options{Logger: quiet()}))
	t.Cleanup(srv.Close)
	devs.HandleMessage(mqtt.Message{Topic: "zigbee2mqtt/hall_motion", Payload: []byte(`{"occupancy":true,"illuminance":12}`)})
	e.FlushHistory()
	e.FlushLogbook()
	c := &fixture{t: t, srv: srv}
	abbr, _ := time.Now().In(akl).Zone()
	_, body, _ := c.client().get("/devices/hall_motion")
	mustContain(t, "device page", body, `"tz":"Pacific/Auckland"`)
	_, body, _ = c.client().get("/logbook")
	mustContain(t, "logbook", body, " "+abbr+"</time>", "("+"Pacific/Auckland)")
	if strings.Contains(body, " UTC</time>") {
		t.Error("the logbook shows a time in UTC, the machine's zone")
	}
}

func TestChartZone(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	now := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		tz   *time.Location
		want string
	}{
		{paris, "Europe/Paris"},
		{time.UTC, "UTC"},
		{time.FixedZone("", 0), "UTC"},
		{time.FixedZone("", 5*3600), "Etc/GMT-5"},  // UTC+5
		{time.FixedZone("", -8*3600), "Etc/GMT+8"}, // UTC-8
		{time.FixedZone("", 5*3600+1800), ""},      // no Etc/GMT zone: the browser's
		{nil, ""},
	} {
		if got := chartZone(tc.tz, now); got != tc.want {
			t.Errorf("%v: %q, want %q", tc.tz, got, tc.want)
		}
	}
}
