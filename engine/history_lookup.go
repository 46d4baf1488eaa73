package engine

import (
	"context"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/internal/shown"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// HistoryArg is lookup's opt-in history argument (get of a state entry):
// the recorded changes beside the entry, as live is, never in it.
type HistoryArg struct {
	// Since and Until bound the range: an ISO 8601 duration back from now
	// ("PT12H"), an RFC 3339 time, or a local time in the server's time
	// zone ("2026-03-01T22:00"). Default: the last 24 hours.
	Since string `json:"since,omitempty"`
	Until string `json:"until,omitempty"`
	// Limit bounds the changes (else buckets) returned: default 100, at
	// most MaxLookupHistory.
	Limit int `json:"limit,omitempty"`
}

// LookupHistory is the history member of a get response.
type LookupHistory struct {
	*EntityHistory
	// TimeZone is the server's time zone, to read "last night" in.
	TimeZone string `json:"time_zone,omitempty"`
}

// Lookup history bounds.
const (
	defaultLookupHistory = 100
	MaxLookupHistory     = 500
)

// lookupHistory answers a get's history argument for entry id.
func (e *Engine) lookupHistory(ctx context.Context, v *view, en *pilotage.Entry, arg *HistoryArg) (*LookupHistory, error) {
	bad := func(msg string) error {
		return &pilotage.RequestError{Kind: pilotage.ErrInvalidRequest, Message: "history: " + msg, CatalogVersion: v.Version()}
	}
	if en.Kind != pilotage.KindState {
		return nil, bad("recorded for state entries only; " + shown.Quote(en.ID) + " is " + string(en.Kind))
	}
	if arg.Limit < 0 || arg.Limit > MaxLookupHistory {
		return nil, bad("limit must be 1.." + itoa(MaxLookupHistory))
	}
	now := e.Now()
	to, err := e.historyTime(arg.Until, now, now)
	if err != nil {
		return nil, bad("until: " + err.Error())
	}
	from, err := e.historyTime(arg.Since, now, to.Add(-24*time.Hour))
	if err != nil {
		return nil, bad("since: " + err.Error())
	}
	limit := arg.Limit
	if limit == 0 {
		limit = defaultLookupHistory
	}
	h, err := e.History(ctx, HistoryRequest{ID: en.ID, From: from, To: to, Points: limit})
	if err != nil {
		return nil, err
	}
	tz := e.cfg.TimeZone.String()
	if tz == "Local" {
		tz = ""
	}
	return &LookupHistory{EntityHistory: h, TimeZone: tz}, nil
}

// historyTime reads a history bound: "" is def, a duration is that long
// before now, else an RFC 3339 or local time.
func (e *Engine) historyTime(s string, now, def time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return def, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, e.cfg.TimeZone); err == nil {
			return t, nil
		}
	}
	if d, err := rules.ParseDuration(strings.TrimPrefix(s, "-")); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, errBadTime(s)
}

type errBadTime string

func (e errBadTime) Error() string {
	return "want a duration back from now (PT12H), an RFC 3339 time or a local time (2026-03-01T22:00), got " + shown.Quote(string(e))
}
