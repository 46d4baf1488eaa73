package main

import (
	"encoding/json"
	"net/http"

	"github.com/pilothouse/pilothouse/devices"
	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/mqtt"
	"github.com/pilothouse/pilothouse/storage"
)

// health is the /healthz document: an overall status (the first reason the
// house is not healthy, else "ok") and what each part reports.
type health struct {
	Status  string              `json:"status"`
	Version string              `json:"version"`
	Storage storage.WriteStatus `json:"storage"`
	// History: state changes recorded, dropped, failed (visible, not
	// unhealthy).
	History engine.HistoryStatus `json:"history"`
	// Logbook: entries written, dropped (queue full), failed, trimmed.
	Logbook engine.LogbookStatus `json:"logbook"`
	// Instance identifies this run of the server.
	Instance string `json:"instance"`
	// Endpoint: whether the data folder says where this server answers
	// (server.json, what pilothouse stdio bridges to; absent without HTTP).
	Endpoint *endpointHealth `json:"endpoint,omitempty"`
	// Devices counts devices that are not (fully) modelled: their entries
	// say why.
	Devices devicesHealth `json:"devices"`
	// HTTP counts open connections and event streams and what the bounds
	// refused (limits.max_connections, max_streams, …); Sessions the MCP
	// sessions live and ended.
	HTTP     *mcpserver.HTTPStats    `json:"http,omitempty"`
	Sessions *mcpserver.SessionStats `json:"mcp_sessions,omitempty"`
	// Load says how the server kept up since it started: MQTT deliveries
	// that held the broker back or were lost, what became of the firing
	// records (visible, not unhealthy).
	Load loadReport `json:"load"`
	// Broker: the embedded broker's size bounds (absent with mqtt.broker).
	Broker *brokerHealth `json:"broker,omitempty"`
	// MQTT: how the connection to mqtt.broker has held up: outages (the
	// last one's start and length), silent drops, session takeovers
	// (absent with the embedded broker).
	MQTT *mqtt.Link `json:"mqtt,omitempty"`
	// ServedRuns: bytes of stored runs being served now, and the reads
	// refused over limits.max_served_run_bytes.
	ServedRuns engine.ServedStats `json:"served_runs"`
	// Runs counts run records not stored (refusals past the per-principal
	// bound).
	Runs engine.RunStats `json:"runs"`
	// Notify: what each webhook or ntfy channel sent, retried and gave up
	// on, with its last failure (visible, not unhealthy).
	Notify map[string]devices.NotifyStats `json:"notify,omitempty"`
}

type devicesHealth struct {
	Total      int `json:"total"`
	Partial    int `json:"partial"`
	Unmodelled int `json:"unmodelled"`
	// ConfigsRead counts the discovery configs (Home Assistant's, and
	// Zigbee2MQTT's device list) the catalog read since the start.
	ConfigsRead int64 `json:"configs_read"`
	// Refused: MQTT payloads over mqtt.max_message_bytes (or 256 KiB for
	// a discovery config or a state) not read, and template renderings
	// one message's work budget did not cover.
	Refused devices.Refusals `json:"refused"`
}

// brokerHealth is what the embedded broker's bounds refused.
type brokerHealth struct {
	// OversizedPackets: clients disconnected for a packet over
	// mqtt.max_message_bytes.
	OversizedPackets uint64 `json:"oversized_packets"`
	// RetainRefused: retained messages delivered but not retained
	// (mqtt.embedded_max_retained_bytes); RetainedBytes: retained now.
	RetainRefused uint64 `json:"retain_refused"`
	RetainedBytes int64  `json:"retained_bytes"`
	// AuthRefused: connections refused for their credentials (or a will
	// they may not publish); AuthThrottled: refused unread, after too many
	// wrong passwords from the address.
	AuthRefused   uint64 `json:"auth_refused"`
	AuthThrottled uint64 `json:"auth_throttled"`
}

// healthz answers 200 when the broker answers and storage can write, else
// 503 with the reason in status.
func (a *app) healthz(w http.ResponseWriter, _ *http.Request) {
	h := a.healthDoc()
	code := http.StatusOK
	if h.Status != "ok" {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(h)
}

// healthDoc is the /healthz document, which the web UI's health page
// explains too.
func (a *app) healthDoc() health {
	h := health{Status: "ok", Version: engine.Version, Storage: a.store.WriteStatus(), Instance: a.instance,
		History: a.eng.HistoryStatus(), Logbook: a.eng.LogbookStatus(), Load: a.load(), ServedRuns: a.eng.ServedStats(), Runs: a.eng.RunStats()}
	cov := a.devs.Coverage()
	h.Devices = devicesHealth{Total: cov.Devices, Partial: cov.Partial, Unmodelled: cov.Unmodelled, Refused: a.devs.Refusals(),
		ConfigsRead: a.devs.ConfigsRead()}
	h.Notify = a.devs.NotifyStats()
	if a.broker != nil {
		lc := a.broker.LimitCounts()
		ac := a.broker.AuthCounts()
		h.Broker = &brokerHealth{OversizedPackets: lc.OversizedPackets.Load(), RetainRefused: lc.RetainRefused.Load(), RetainedBytes: lc.RetainedBytes.Load(),
			AuthRefused: ac.RefusedConnects.Load(), AuthThrottled: ac.Throttled.Load()}
	}
	if c, ok := a.client.(*mqtt.Client); ok {
		l := c.Link()
		h.MQTT = &l
	}
	if a.guard != nil {
		st, ss := a.guard.Stats(), a.mcp.Sessions()
		h.HTTP, h.Sessions = &st, &ss
	}
	h.Endpoint = a.announced.health()
	if ok, reason := a.client.Health(); !ok {
		h.Status = reason
	} else if !h.Storage.OK {
		// Storage that cannot write (locked by another process, disk
		// full, read-only) fails deploys and loses run records.
		h.Status = "storage cannot write"
	} else if h.Endpoint != nil && !h.Endpoint.OK {
		h.Status = "cannot write server.json in the data folder: pilothouse stdio cannot find this server"
	}
	return h
}
