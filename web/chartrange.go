package web

// The time range of a page's charts: a preset (1h, 24h, 7d), a custom
// range (the form, the zoom links, or a drag on a chart), or by default
// 24 h fitted to the data (a fresh install's few minutes fill the chart
// instead of a sliver at its right edge). Times the server was not
// running are gaps, not held values.

import (
	"context"
	"encoding/json"
	"math"
	"net/url"
	"strconv"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
)

// The bounds of a custom range, and the smallest fitted one.
const (
	minRangeSpan = time.Minute
	maxRangeSpan = 400 * 24 * time.Hour
	minFitSpan   = time.Minute
)

// datetimeLocal is the value form of <input type="datetime-local">.
const datetimeLocal = "2006-01-02T15:04"

// chartWindow is the range a page's charts show.
type chartWindow struct {
	from, to time.Time
	preset   string // the preset's name; "" custom or default
	custom   bool
	note     string // why a range asked for was not used
}

// pickWindow reads ?range= (a preset) or ?from=&to= (datetime-local in
// the house's zone, or Unix seconds as a drag on a chart sends them).
func (c clock) pickWindow(q url.Values, now time.Time) chartWindow {
	for _, r := range historyRanges {
		if q.Get("range") == r.Name {
			return chartWindow{from: now.Add(-r.Span), to: now, preset: r.Name}
		}
	}
	w := chartWindow{from: now.Add(-24 * time.Hour), to: now}
	if q.Get("from") == "" && q.Get("to") == "" {
		if q.Get("range") != "" {
			w.note = "Unknown range " + strconv.Quote(clip(q.Get("range"))) + ": showing the default."
		}
		return w
	}
	from, errF := c.parseTime(q.Get("from"))
	to, errT := c.parseTime(q.Get("to"))
	if q.Get("to") == "" {
		to, errT = now, nil
	}
	span := to.Sub(from)
	switch {
	case errF != nil || errT != nil:
		w.note = "That range is not a time (want e.g. 2026-03-01T18:00): showing the default."
	case span < minRangeSpan || span > maxRangeSpan:
		w.note = "A range must be from 1 minute to 400 days long, its start first: showing the default."
	default:
		w = chartWindow{from: from, to: to, custom: true}
	}
	return w
}

func (c clock) parseTime(s string) (time.Time, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0), nil
	}
	return time.ParseInLocation(datetimeLocal, s, c.loc)
}

// rangeControls fills the view's range links and form for w on the page
// at base.
func (c clock) rangeControls(h *historyView, w chartWindow, base string) {
	h.Ranges = make([]rangeLink, len(historyRanges))
	for i, r := range historyRanges {
		h.Ranges[i] = rangeLink{Name: r.Name, Href: base + "?range=" + r.Name, Current: r.Name == w.preset || (w.preset == "" && !w.custom && !h.Fitted && r.Name == defaultRange)}
	}
	h.Range, h.Custom, h.Note = w.preset, w.custom, w.note
	h.FromValue, h.ToValue = w.from.In(c.loc).Format(datetimeLocal), w.to.In(c.loc).Format(datetimeLocal)
	span := w.to.Sub(w.from)
	link := func(name string, from, to time.Time) rangeLink {
		q := url.Values{"from": {strconv.FormatInt(from.Unix(), 10)}, "to": {strconv.FormatInt(to.Unix(), 10)}}
		return rangeLink{Name: name, Href: base + "?" + q.Encode()}
	}
	mid := w.from.Add(span / 2)
	h.Moves = []rangeLink{link("← Earlier", w.from.Add(-span/2), w.to.Add(-span/2))}
	if span/2 >= minRangeSpan {
		h.Moves = append(h.Moves, link("Zoom in", mid.Add(-span/4), mid.Add(span/4)))
	}
	if span*2 <= maxRangeSpan {
		h.Moves = append(h.Moves, link("Zoom out", mid.Add(-span), mid.Add(span)))
	}
	h.Moves = append(h.Moves, link("Later →", w.from.Add(span/2), w.to.Add(span/2)))
}

// chartsIn builds the charts of states over the page's range: w, or by
// default the last 24 h fitted to where the data begins; it fills the
// view's range, its controls and the server's downtimes, and returns the
// range drawn.
func (s *server) chartsIn(ctx context.Context, h *historyView, q url.Values, base string, states []*pilotage.Entry) (time.Time, time.Time, error) {
	w := s.clock.pickWindow(q, s.e.Now())
	charts, err := s.buildCharts(ctx, states, w.from, w.to)
	if err != nil {
		return w.from, w.to, err
	}
	if w.preset == "" && !w.custom {
		if first, ok := firstData(charts); ok && first.After(w.from.Add(w.to.Sub(w.from)/10)) {
			from := first.Add(-max(w.to.Sub(first)/20, 5*time.Second)).Truncate(time.Second)
			from = minTime(from, w.to.Add(-minFitSpan))
			if charts, err = s.buildCharts(ctx, states, from, w.to); err != nil {
				return w.from, w.to, err
			}
			w.from, h.Fitted = from, true
		}
	}
	s.clock.rangeControls(h, w, base)
	gaps := s.e.Downtimes(w.from, w.to)
	for _, g := range gaps {
		h.Chart.Gaps = append(h.Chart.Gaps, [2]int64{g.From.Unix(), g.To.Unix()})
	}
	for i := range charts {
		cutGaps(&charts[i], h.Chart.Gaps, w.from.Unix())
	}
	if err := s.offlineCharts(ctx, charts, states, w.from, w.to); err != nil {
		return w.from, w.to, err
	}
	h.Chart.TZ, h.Chart.From, h.Chart.To, h.Chart.Charts = h.TZ, w.from.Unix(), w.to.Unix(), charts
	return w.from, w.to, nil
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// firstData is the earliest time any chart has data from (false: none
// has any; a value held from before the range is data from its start).
func firstData(charts []chartSpec) (time.Time, bool) {
	first, ok := int64(math.MaxInt64), false
	for _, c := range charts {
		if c.first != 0 {
			first, ok = min(first, c.first), true
		}
	}
	return time.Unix(first, 0), ok
}

// cutGaps makes the server's downtimes gaps: a line gets a null point at
// each gap's start (and loses a value held into the range across one),
// a band loses what it held during them.
func cutGaps(c *chartSpec, gaps [][2]int64, from int64) {
	for _, g := range gaps {
		if c.Kind == "line" {
			i := 0
			for i < len(c.T) && c.T[i] <= g[0] {
				i++
			}
			if g[0] <= from && len(c.T) > 0 && c.T[0] == from {
				c.Mean[0], c.Min[0], c.Max[0] = math.NaN(), math.NaN(), math.NaN()
				continue
			}
			c.T = append(c.T[:i], append([]int64{g[0]}, c.T[i:]...)...)
			c.Mean = insertNaN(c.Mean, i)
			c.Min = insertNaN(c.Min, i)
			c.Max = insertNaN(c.Max, i)
			continue
		}
		var segs [][4]int64
		for _, sg := range c.Segs {
			if sg[0] < g[0] {
				segs = append(segs, [4]int64{sg[0], min(sg[1], g[0]), sg[2], sg[3]})
			}
			if sg[1] > g[1] {
				segs = append(segs, [4]int64{max(sg[0], g[1]), sg[1], sg[2], sg[3]})
			}
		}
		c.Segs = segs
	}
}

func insertNaN(v nums, i int) nums { return append(v[:i], append(nums{math.NaN()}, v[i:]...)...) }

// nums is a chart's values; NaN is a gap, sent as null.
type nums []float64

func (v nums) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 8*len(v)+2)
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(x) || math.IsInf(x, 0) {
			b = append(b, "null"...)
			continue
		}
		n, err := json.Marshal(x)
		if err != nil {
			return nil, err
		}
		b = append(b, n...)
	}
	return append(b, ']'), nil
}
