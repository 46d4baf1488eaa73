package main

import (
	"encoding/json"
	"net/http"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
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
	// Instance identifies this run of the server (stdio bridges check it).
	Instance string `json:"instance"`
	// Devices counts devices that are not (fully) modelled: their entries
	// say why.
	Devices devicesHealth `json:"devices"`
	// HTTP counts open connections and event streams and what the bounds
	// refused (limits.max_connections, max_streams, …); Sessions the MCP
	// sessions live and ended.
	HTTP     *mcpserver.HTTPStats    `json:"http,omitempty"`
	Sessions *mcpserver.SessionStats `json:"mcp_sessions,omitempty"`
	// ServedRuns: bytes of stored runs being served now, and the reads
	// refused over limits.max_served_run_bytes.
	ServedRuns engine.ServedStats `json:"served_runs"`
	// Runs counts run records not stored (refusals past the per-principal
	// bound).
	Runs engine.RunStats `json:"runs"`
}

type devicesHealth struct {
	Total      int `json:"total"`
	Partial    int `json:"partial"`
	Unmodelled int `json:"unmodelled"`
}

// healthz answers 200 when the broker answers and storage can write, else
// 503 with the reason in status.
func (a *app) healthz(w http.ResponseWriter, _ *http.Request) {
	h := health{Status: "ok", Version: engine.Version, Storage: a.store.WriteStatus(), Instance: a.instance,
		History: a.eng.HistoryStatus(), ServedRuns: a.eng.ServedStats(), Runs: a.eng.RunStats()}
	cov := a.devs.Coverage()
	h.Devices = devicesHealth{Total: cov.Devices, Partial: cov.Partial, Unmodelled: cov.Unmodelled}
	if a.guard != nil {
		st, ss := a.guard.Stats(), a.mcp.Sessions()
		h.HTTP, h.Sessions = &st, &ss
	}
	if ok, reason := a.client.Health(); !ok {
		h.Status = reason
	} else if !h.Storage.OK {
		// Storage that cannot write (locked by another process, disk
		// full, read-only) fails deploys and loses run records.
		h.Status = "storage cannot write"
	}
	code := http.StatusOK
	if h.Status != "ok" {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(h)
}
