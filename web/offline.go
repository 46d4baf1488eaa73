package web

import (
	"context"
	"errors"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
)

// A device that says it is offline: rules read no value of its states and
// no trigger fires on them (engine/internal/sched/availability.go), so the
// pages say so too. When it went offline, and the spans it was offline
// within a chart's range, come from the logbook's availability entries.

// availPages bounds the logbook pages read for one device's availability
// (a device flapping faster has its older spans left undrawn).
const (
	availPages = 5
	availLimit = 200
)

// offlineSpans reads dev's availability changes back to from: the spans
// it was offline within [from, to] (an ongoing one ends at to), and since
// when it is offline now (zero: online, or the logbook does not say).
func (s *server) offlineSpans(ctx context.Context, dev string, from, to time.Time, offlineNow bool) (spans [][2]int64, since time.Time, err error) {
	q := engine.LogQuery{Kind: "availability", Device: dev, Limit: availLimit}
	end, open := to, offlineNow
	for page := 0; page < availPages; page++ {
		lp, err := s.e.Logbook(ctx, q)
		if err != nil {
			return nil, time.Time{}, err
		}
		for i, en := range lp.Entries {
			if page == 0 && i == 0 && offlineNow && en.Status == "offline" {
				since = en.Time
			}
			switch en.Status {
			case "online":
				end, open = en.Time, true
			case "offline":
				if open && en.Time.Before(to) {
					spans = append(spans, [2]int64{max(en.Time.Unix(), from.Unix()), end.Unix()})
				}
				open = false
			}
			if en.Time.Before(from) {
				return reverse(spans), since, nil
			}
		}
		if lp.Next == "" {
			break
		}
		q.Cursor = lp.Next
	}
	return reverse(spans), since, nil
}

func reverse(spans [][2]int64) [][2]int64 {
	for i, j := 0, len(spans)-1; i < j; i, j = i+1, j-1 {
		spans[i], spans[j] = spans[j], spans[i]
	}
	return spans
}

// offlineCharts cuts each chart over the spans its device was offline: a
// line breaks there and loses the values sent meanwhile (rules did not
// read them), a band loses what it held.
func (s *server) offlineCharts(ctx context.Context, charts []chartSpec, states []*pilotage.Entry, from, to time.Time) error {
	byDev := map[string][][2]int64{}
	for i := range charts {
		dev := ""
		for _, en := range states {
			if en.ID == charts[i].ID {
				dev = tagValue(en.Tags, "device:")
			}
		}
		if dev == "" {
			continue
		}
		spans, ok := byDev[dev]
		if !ok {
			l, _ := s.e.Live(ctx, dev)
			var err error
			if spans, _, err = s.offlineSpans(ctx, dev, from, to, l.Available != nil && !*l.Available); err != nil {
				return err
			}
			byDev[dev] = spans
		}
		cutOffline(&charts[i], spans, from.Unix(), to.Unix())
	}
	return nil
}

// cutOffline removes a line's points inside the spans (and at a span's
// end when it is the range's: still offline), then cuts it as a downtime.
func cutOffline(c *chartSpec, spans [][2]int64, from, to int64) {
	if len(spans) == 0 {
		return
	}
	c.Offline = spans
	if c.Kind == "line" {
		keep := 0
		for i, t := range c.T {
			if inSpan(t, spans, to) {
				continue
			}
			c.T[keep], c.Mean[keep], c.Min[keep], c.Max[keep] = t, c.Mean[i], c.Min[i], c.Max[i]
			keep++
		}
		c.T, c.Mean, c.Min, c.Max = c.T[:keep], c.Mean[:keep], c.Min[:keep], c.Max[:keep]
	}
	cutGaps(c, spans, from)
}

func inSpan(t int64, spans [][2]int64, to int64) bool {
	for _, g := range spans {
		// A point in the span's first second may be a value sent after it
		// began (the chart counts whole seconds): it goes too.
		if t >= g[0] && (t < g[1] || g[1] >= to && t <= g[1]) {
			return true
		}
	}
	return false
}

// staleView is what a page says of an offline device's values.
type staleView struct {
	Dev   string
	Since time.Time // zero: the logbook does not say
}

// staleValues shows dv's states as they were when it went offline (the
// history's value before then), not what it sent since: rules read none.
func (s *server) staleValues(ctx context.Context, dv *deviceView) (*staleView, error) {
	if dv.Available == nil || *dv.Available {
		return nil, nil
	}
	now := s.e.Now()
	_, since, err := s.offlineSpans(ctx, dv.Entry.ID, now, now, true)
	if err != nil {
		return nil, err
	}
	st := &staleView{Dev: dv.Entry.ID, Since: since}
	if since.IsZero() || !since.Before(now) {
		return st, nil
	}
	for i := range dv.States {
		h, err := s.e.History(ctx, engine.HistoryRequest{ID: dv.States[i].Entry.ID, From: since, To: now, Points: 1})
		var re *pilotage.RequestError
		if errors.As(err, &re) && re.Kind == pilotage.ErrUnsupported {
			return st, nil // no history on this server: the live value, marked stale
		}
		if err != nil {
			return nil, err
		}
		dv.States[i].Value = "—"
		if h.Start != nil && h.Start.Value != nil {
			dv.States[i].Value = liveShown(h.Start.Value)
		}
	}
	return st, nil
}

// offlineReads lists the devices the rule's triggers and conditions read
// that say they are offline now, each once.
func (s *server) offlineReads(ctx context.Context, rule string) ([]staleView, error) {
	reads, err := s.e.RuleReads(ctx, rule)
	if err != nil {
		return nil, err
	}
	var out []staleView
	seen := map[string]bool{}
	now := s.e.Now()
	for _, id := range reads {
		res, err := s.e.Lookup(ctx, engine.LookupRequest{Verb: "get", ID: id})
		if err != nil {
			continue // out of scope or gone: the page says entries are missing
		}
		dev := tagValue(res.(*engine.GetResponse).Entry.Tags, "device:")
		if dev == "" || seen[dev] {
			continue
		}
		seen[dev] = true
		if l, ok := s.e.Live(ctx, dev); !ok || l.Available == nil || *l.Available {
			continue
		}
		_, since, err := s.offlineSpans(ctx, dev, now, now, true)
		if err != nil {
			return nil, err
		}
		out = append(out, staleView{Dev: dev, Since: since})
	}
	return out, nil
}
