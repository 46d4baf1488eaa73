package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/history"
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

// EntityHistory is a state entry's history over a range.
type EntityHistory struct {
	ID      string    `json:"id"`
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Numeric bool      `json:"numeric"`
	Unit    string    `json:"unit,omitempty"`
	// Count is how many changes were recorded in the range; Counts, for
	// a state that is not numeric, how many set each value (keys are the
	// values as JSON: "true", "\"ON\"").
	Count  int            `json:"count"`
	Counts map[string]int `json:"counts,omitempty"`
	// CountsOf, when set, says Counts cover only the range's latest
	// CountsOf changes (values not counted by the store: a state with
	// many distinct values, or changes recorded by an older version).
	CountsOf int `json:"counts_of,omitempty"`
	// Start is the value in force when the range began (its last change
	// before From), when one is recorded.
	Start *HistoryChange `json:"start,omitempty"`
	// Changes, when the range holds at most Points of them; else Bands
	// (not numeric) summarise each bucket. Numeric states have Buckets.
	Changes       []HistoryChange `json:"changes,omitempty"`
	Bands         []BandBucket    `json:"bands,omitempty"`
	Buckets       []NumBucket     `json:"buckets,omitempty"`
	BucketSeconds int64           `json:"bucket_seconds,omitempty"`
}

// HistoryChange is one recorded change.
type HistoryChange struct {
	T     time.Time `json:"t"`
	Value any       `json:"value"`
}

// NumBucket summarises a numeric state's changes in one bucket.
type NumBucket struct {
	T    time.Time `json:"t"`
	N    int       `json:"n"`
	Min  float64   `json:"min"`
	Max  float64   `json:"max"`
	Mean float64   `json:"mean"`
}

// BandBucket is one bucket of a state that changed too often to list:
// how many changes it saw and the last value it was set to.
type BandBucket struct {
	T    time.Time `json:"t"`
	N    int       `json:"n"`
	Last any       `json:"last"`
}

// History reads a state entry's recorded history within the caller's
// scope: an entry the caller cannot see is not found, as in lookup.
func (e *Engine) History(ctx context.Context, req HistoryRequest) (*EntityHistory, error) {
	p := e.principal(ctx)
	v := e.cat.View(p)
	en, ok := v.Get(req.ID)
	if !ok || en.Kind != pilotage.KindState {
		return nil, &pilotage.RequestError{Kind: pilotage.ErrNotFound, Message: "no state entry with id " + quote(req.ID), CatalogVersion: v.Version()}
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
	if err := e.readHistory(ctx, h, req); err != nil {
		if re := StorageRequestError(err); re != nil {
			return nil, re
		}
		return nil, fmt.Errorf("engine: reading history of %s: %w", req.ID, err)
	}
	return h, nil
}

func (e *Engine) readHistory(ctx context.Context, h *EntityHistory, req HistoryRequest) error {
	st := e.store
	w := history.BucketWidth(req.To.Sub(req.From), req.Points)
	if sv, ok, err := st.HistoryBefore(ctx, req.ID, req.From); err != nil {
		return err
	} else if ok {
		h.Start = &HistoryChange{T: sv.T, Value: history.Value(sv)}
	}
	if h.Numeric {
		bs, err := st.HistoryNumBuckets(ctx, req.ID, req.From, req.To, w)
		h.BucketSeconds = int64(w / time.Second)
		h.Buckets = make([]NumBucket, len(bs))
		for i, b := range bs {
			h.Buckets[i] = NumBucket{T: b.T, N: b.N, Min: b.Lo, Max: b.Hi, Mean: b.Mean}
			h.Count += b.N
		}
		return err
	}
	n, err := st.HistoryCount(ctx, req.ID, req.From, req.To)
	if err != nil {
		return err
	}
	h.Count = n
	var walked int
	if h.Counts, walked, err = st.HistoryValueCounts(ctx, req.ID, req.From, req.To, maxHistoryValues); err != nil {
		return err
	}
	if walked > 0 && walked < n {
		h.CountsOf = walked
	}
	if n <= req.Points {
		ch, err := st.HistoryChanges(ctx, req.ID, req.From, req.To, req.Points)
		h.Changes = make([]HistoryChange, len(ch))
		for i, c := range ch {
			h.Changes[i] = HistoryChange{T: c.T, Value: history.Value(c)}
		}
		return err
	}
	bs, err := st.HistoryLastBuckets(ctx, req.ID, req.From, req.To, w)
	h.BucketSeconds = int64(w / time.Second)
	h.Bands = make([]BandBucket, len(bs))
	for i, b := range bs {
		h.Bands[i] = BandBucket{T: b.T, N: b.N, Last: history.Value(b.Last)}
	}
	return err
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
