package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/history"
	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
)

// History read bounds.
const (
	// DefaultHistoryPoints is how many changes (else buckets) a history
	// read returns by default: about one per pixel column of a chart.
	DefaultHistoryPoints = 720
	// MaxHistoryPoints bounds any history read.
	MaxHistoryPoints = 2000
	// maxHistoryValues bounds the per-value counts of a history read.
	maxHistoryValues = 32
)

// The state history recorder's configuration and health, as the
// engine's callers name them.
type (
	HistoryConfig = history.Config
	HistoryStatus = history.Status
)

// HistoryStatus reports the state history recorder's health.
func (e *Engine) HistoryStatus() HistoryStatus {
	if e.hist == nil {
		return HistoryStatus{}
	}
	st := e.hist.Status()
	c := Config{Retention: e.cfg.History.Retention}
	st.Retention = c.RetentionText()
	return st
}

// FlushHistory writes every state change queued so far (tests, tools).
func (e *Engine) FlushHistory() {
	if e.hist != nil {
		e.hist.Sync()
	}
}

// A state entry's history as History reads it (engine/internal/history).
type (
	EntityHistory = history.EntityHistory
	HistoryChange = history.Change
	NumBucket     = history.NumBucket
	BandBucket    = history.BandBucket
)

// HistoryRequest asks for one state entry's recorded changes in [From, To).
type HistoryRequest struct {
	ID       string
	From, To time.Time
	// Points bounds the answer: every change when there are at most this
	// many, else one bucket per 1/Points of the range (default
	// DefaultHistoryPoints, at most MaxHistoryPoints). Numeric states are
	// always read as buckets (count, min, max, mean).
	Points int
}

// History reads a state entry's recorded history within the caller's
// scope: an entry the caller cannot see is not found, as in lookup.
func (e *Engine) History(ctx context.Context, req HistoryRequest) (*EntityHistory, error) {
	p := e.principal(ctx)
	v := e.cat.View(p)
	en, ok := v.Get(req.ID)
	if !ok || en.Kind != pilotage.KindState {
		return nil, &pilotage.RequestError{Kind: pilotage.ErrNotFound, Message: "no state entry with id " + shown.Quote(req.ID), CatalogVersion: v.Version()}
	}
	if e.hist == nil {
		return nil, &pilotage.RequestError{Kind: pilotage.ErrUnsupported, Message: "state history is not recorded on this server", CatalogVersion: v.Version()}
	}
	if req.To.IsZero() {
		req.To = e.Now()
	}
	if req.From.IsZero() {
		req.From = req.To.Add(-24 * time.Hour)
	}
	if !req.From.Before(req.To) {
		return nil, &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: "history: from must be before to", CatalogVersion: v.Version()}
	}
	if req.Points <= 0 {
		req.Points = DefaultHistoryPoints
	}
	req.Points = min(req.Points, MaxHistoryPoints)
	num, unit := numericSchema(en.OutputSchema)
	h := &EntityHistory{ID: req.ID, From: req.From.UTC(), To: req.To.UTC(), Numeric: num, Unit: unit}
	if err := history.Read(ctx, e.store, h, req.ID, req.From, req.To, req.Points, maxHistoryValues); err != nil {
		if re := StorageRequestError(err); re != nil {
			return nil, re
		}
		return nil, fmt.Errorf("engine: reading history of %s: %w", req.ID, err)
	}
	return h, nil
}

// numericSchema reports whether an output schema describes a number, and
// its unit.
func numericSchema(raw json.RawMessage) (bool, string) {
	var sch struct {
		Type  any    `json:"type"`
		Unit  string `json:"x-unit"`
		Unit2 string `json:"unit"`
	}
	if json.Unmarshal(raw, &sch) != nil {
		return false, ""
	}
	unit := sch.Unit
	if unit == "" {
		unit = sch.Unit2
	}
	return sch.Type == "number" || sch.Type == "integer", unit
}
