package main

import (
	"fmt"
	"time"

	"github.com/pilothouse/pilothouse/engine"
)

// loadReport is what /healthz (and, as warnings, the web UI) says about
// how the server kept up since it started: MQTT deliveries that waited for
// the rule engine (backpressure on the broker) or were lost, and what
// became of the firing records.
type loadReport struct {
	MQTT struct {
		Backpressured uint64  `json:"backpressured"`
		WaitedMS      float64 `json:"waited_ms"`
		Dropped       uint64  `json:"dropped"`
	} `json:"mqtt"`
	Recorder engine.RecorderStats `json:"recorder"`
	Warnings []string             `json:"warnings,omitempty"`
}

func (a *app) load() loadReport {
	var r loadReport
	d := a.client.Delivery()
	r.MQTT.Backpressured, r.MQTT.Dropped = d.Backpressured, d.Dropped
	r.MQTT.WaitedMS = float64(d.Waited.Microseconds()) / 1000
	r.Recorder = a.eng.RecorderStats()
	rec := r.Recorder
	for _, w := range []struct {
		n    uint64
		text string
	}{
		{d.Backpressured, fmt.Sprintf("%d MQTT messages waited for the rule engine to catch up (%s in all): the broker was held back", d.Backpressured, d.Waited.Round(time.Millisecond))},
		{d.Dropped, fmt.Sprintf("%d MQTT messages lost: a handler was stuck", d.Dropped)},
		{rec.Summarized, fmt.Sprintf("%d firings recorded as summaries without their trace: the run recorder was behind", rec.Summarized)},
		{rec.Dropped, fmt.Sprintf("%d firing records lost: the run recorder was far behind", rec.Dropped)},
		{rec.Failed, fmt.Sprintf("%d firing records lost: the database refused them", rec.Failed)},
	} {
		if w.n > 0 {
			r.Warnings = append(r.Warnings, w.text+" (since the start)")
		}
	}
	return r
}
