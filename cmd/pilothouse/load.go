package main

import (
	"fmt"
	"math"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/mqtt"
)

// saturatedBusy is the busy fraction from which /healthz's load says
// "saturated".
const saturatedBusy = 0.9

// saturatedUnread is how many bytes may wait unread in the connection
// before the load status says saturated (a few thousand state messages).
const saturatedUnread = 256 << 10

// loadReport is what /healthz (and, as warnings, the web UI) says about
// how the server kept up since it started: MQTT deliveries that waited for
// the rule engine (backpressure on the broker) or were lost, and what
// became of the firing records; and how it keeps up now: status
// "saturated" when the busiest MQTT handler ran for at least
// saturatedBusy of the last few seconds, or saturatedUnread bytes wait
// unread in the connection (past capacity the queue builds there, then in
// the broker, where no counter of ours sees it), else "ok".
type loadReport struct {
	Status string `json:"status"`
	MQTT   struct {
		// Busy: the fraction (0..1) of the last mqtt.BusyWindow the
		// busiest handler spent running.
		Busy          float64 `json:"busy"`
		Backpressured uint64  `json:"backpressured"`
		WaitedMS      float64 `json:"waited_ms"`
		Dropped       uint64  `json:"dropped"`
		// Oversized: QoS 0 and 1 messages over mqtt.max_message_bytes skipped
		// as they arrived from an external broker.
		Oversized uint64 `json:"oversized"`
		// UnreadBytes: received from the broker and not handled yet, now
		// (the socket's and the read buffer's).
		UnreadBytes int `json:"unread_bytes"`
	} `json:"mqtt"`
	Recorder engine.RecorderStats `json:"recorder"`
	// Firings: the firing slots now; a firing that waited a second for
	// one means events are answered late (saturated).
	Firings engine.FiringLoad `json:"firings"`
	// OfflineChanges: state changes of devices that said they were
	// offline; no trigger fired on them.
	OfflineChanges uint64 `json:"offline_changes"`
	// Selectors: triggers by selector that address more states than they
	// watch (the first rules.MaxSelected by id), now and since the start.
	Selectors engine.SelectorOverflow `json:"selectors"`
	Warnings  []string                `json:"warnings,omitempty"`
}

// saturatedWait is how long the oldest firing may wait for a slot before
// the load status says saturated.
const saturatedWait = time.Second

func (a *app) load() loadReport {
	var r loadReport
	d := a.client.Delivery()
	r.MQTT.Backpressured, r.MQTT.Dropped, r.MQTT.Oversized = d.Backpressured, d.Dropped, d.Oversized
	r.MQTT.UnreadBytes = d.Unread
	r.MQTT.WaitedMS = float64(d.Waited.Microseconds()) / 1000
	r.MQTT.Busy = math.Round(d.Busy*1000) / 1000
	r.Recorder = a.eng.RecorderStats()
	rec := r.Recorder
	r.Firings = a.eng.FiringLoad()
	r.OfflineChanges = a.eng.OfflineChanges()
	r.Selectors = a.eng.SelectorOverflow()
	r.Status = "ok"
	if n := r.Selectors.Now; n > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d triggers by selector address more states than they watch: pilothouse_rules says which (narrow them with area, type or tag)", n))
	}
	if fl := r.Firings; fl.OldestWaitMS >= float64(saturatedWait.Milliseconds()) {
		r.Status = "saturated"
		r.Warnings = append(r.Warnings, fmt.Sprintf("saturated: %d firings wait for one of the %d run slots, the oldest for %s; events are answered late (the engine is past its capacity)",
			fl.Waiting, fl.Slots, (time.Duration(fl.OldestWaitMS)*time.Millisecond).Round(time.Millisecond)))
	}
	if d.Busy >= saturatedBusy {
		r.Status = "saturated"
		r.Warnings = append(r.Warnings, fmt.Sprintf("saturated: the rule engine was busy %.0f%% of the last %s; events wait in the connection and the broker (their latency grows)",
			100*d.Busy, mqtt.BusyWindow))
	}
	if d.Unread >= saturatedUnread {
		r.Status = "saturated"
		r.Warnings = append(r.Warnings, fmt.Sprintf("saturated: %d KiB of MQTT messages wait unread in the connection; events are answered late",
			d.Unread>>10))
	}
	r.Warnings = append(r.Warnings, sinceStart(
		counted{d.Backpressured, fmt.Sprintf("%d MQTT messages waited for the rule engine to catch up (%s in all): the broker was held back", d.Backpressured, d.Waited.Round(time.Millisecond))},
		counted{d.Dropped, fmt.Sprintf("%d MQTT messages lost: a handler was stuck", d.Dropped)},
		counted{d.Oversized, fmt.Sprintf("%d MQTT messages over mqtt.max_message_bytes skipped", d.Oversized)},
		counted{rec.Summarized, fmt.Sprintf("%d firings recorded as summaries without their trace: the run recorder was behind", rec.Summarized)},
		counted{rec.Dropped, fmt.Sprintf("%d firing records lost: the run recorder was far behind", rec.Dropped)},
		counted{rec.Failed, fmt.Sprintf("%d firing records lost: the database refused them", rec.Failed)},
	)...)
	r.Warnings = append(r.Warnings, a.losses()...)
	return r
}

// losses are what the house did not keep or do since the start, beside
// the load: each is on /healthz too, and said on every page.
func (a *app) losses() []string {
	h, l, runs := a.eng.HistoryStatus(), a.eng.LogbookStatus(), a.eng.RunStats()
	var unserved []string
	if a.helpers != nil {
		unserved = a.helpers.Unserved()
	}
	return append(unserved, sinceStart(
		counted{h.Dropped, fmt.Sprintf("%d device state changes not kept in the history: its queue was full", h.Dropped)},
		counted{h.Failed, fmt.Sprintf("%d device state changes not kept in the history: the database refused them", h.Failed)},
		counted{l.Dropped, fmt.Sprintf("%d logbook entries lost: the logbook's queue was full", l.Dropped)},
		counted{l.Failed, fmt.Sprintf("%d logbook entries lost: the database refused them", l.Failed)},
		counted{runs.LoopsStopped, fmt.Sprintf("%d rules disabled because they kept firing themselves or each other: the logbook says which", runs.LoopsStopped)},
		counted{runs.FiringsRefused, fmt.Sprintf("%d firings refused: their principal's rules ran or queued limits.max_live_firings_per_principal (an admin's: max_live_firings_admin) at once", runs.FiringsRefused)},
		counted{runs.DeniedUnstored, fmt.Sprintf("%d refused requests not stored: their principals had the most kept", runs.DeniedUnstored)},
	)...)
}

// counted is a count since the start and what it says when it is not 0.
type counted struct {
	n    uint64
	text string
}

// sinceStart says the counts that are not 0.
func sinceStart(cs ...counted) []string {
	var out []string
	for _, c := range cs {
		if c.n > 0 {
			out = append(out, c.text+" (since the start)")
		}
	}
	return out
}
