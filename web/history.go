package web

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"math"
	"net/url"
	"sort"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
)

// The range picker's choices: name, span.
var historyRanges = []struct {
	Name string
	Span time.Duration
}{{"1h", time.Hour}, {"24h", 24 * time.Hour}, {"7d", 7 * 24 * time.Hour}}

const defaultRange = "24h"

// rangeLink is one choice of the range picker.
type rangeLink struct {
	Name    string
	Href    string
	Current bool
}

// historyView is a page's history section: the range picker and the
// charts (with a firings lane on a rule's page).
type historyView struct {
	Range  string // the preset shown ("" custom or default)
	Ranges []rangeLink
	// The range's controls (chartrange.go): the custom range form's
	// values, moves (earlier, zoom, later), why a range asked for was
	// not used; Fitted: the default range starts where the data does.
	Custom, Fitted     bool
	FromValue, ToValue string
	Moves              []rangeLink
	Note               string
	TZ                 string
	Chart              chartData
	Lane               bool
	LaneSummary        string
	Empty              string // what to say when there is nothing to draw
}

// chartData is what charts.js draws, embedded in the page as JSON.
// Times are Unix seconds.
type chartData struct {
	TZ      string       `json:"tz,omitempty"` // IANA name; "" = the browser's
	From    int64        `json:"from"`
	To      int64        `json:"to"`
	Charts  []chartSpec  `json:"charts"`
	Firings []firingMark `json:"firings,omitempty"`
	// Gaps are the times the server was not running: [from, to].
	Gaps [][2]int64 `json:"gaps,omitempty"`
}

// chartSpec is one chart: a line (numbers: mean with a min–max band) or a
// band (any other value: a coloured segment per value held).
type chartSpec struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Unit  string `json:"unit,omitempty"`
	Kind  string `json:"kind"` // "line" or "band"
	// Line: one point per bucket (plus the value held at the range's
	// start and end); Step draws held values (sparse changes).
	T    []int64 `json:"t,omitempty"`
	Mean nums    `json:"mean,omitempty"`
	Min  nums    `json:"min,omitempty"`
	Max  nums    `json:"max,omitempty"`
	Step bool    `json:"step,omitempty"`
	// Band: [from, to, value index, changes] segments.
	Segs   [][4]int64 `json:"segs,omitempty"`
	Values []string   `json:"values,omitempty"`
	// Count is how many changes were recorded in the range.
	Count int `json:"count"`
	// Offline are the spans its device said it was offline: [from, to].
	Offline [][2]int64 `json:"offline,omitempty"`
	// Summary is a text equivalent for screen readers and no-JS.
	Summary string `json:"-"`
	// first is when its data begins (Unix seconds; 0: none).
	first int64
}

// firingMark is a rule's firing on the timeline.
type firingMark struct {
	T      int64  `json:"t"`
	Status string `json:"status"`
	Class  string `json:"class"`
	Run    string `json:"run"`
}

// buildCharts reads the history of each state entry in [from, to) and
// makes its chart; live, when it knows a current value, extends lines
// and bands to the range's end.
func (s *server) buildCharts(ctx context.Context, states []*pilotage.Entry, from, to time.Time) ([]chartSpec, error) {
	out := make([]chartSpec, 0, len(states))
	for _, en := range states {
		h, err := s.e.History(ctx, engine.HistoryRequest{ID: en.ID, From: from, To: to})
		var re *pilotage.RequestError
		if errors.As(err, &re) && re.Kind == pilotage.ErrUnsupported {
			return nil, nil // no history on this server: no charts
		}
		if err != nil {
			return nil, err
		}
		c := chartSpec{ID: en.ID, Label: or(en.Name, en.ID), Unit: h.Unit, Count: h.Count}
		if h.Numeric {
			lineChart(&c, h)
		} else {
			bandChart(&c, h)
		}
		c.first = firstOf(h)
		out = append(out, c)
	}
	return out, nil
}

// firstOf is when h's data begins: its range's start when a value is held
// from before it, else its first bucket, change or band (0: no data).
func firstOf(h *engine.EntityHistory) int64 {
	switch {
	case h.Start != nil:
		return h.From.Unix()
	case len(h.Buckets) > 0:
		return h.Buckets[0].T.Unix()
	case len(h.Changes) > 0 && (len(h.Bands) == 0 || h.Changes[0].T.Before(h.Bands[0].T)):
		return h.Changes[0].T.Unix()
	case len(h.Bands) > 0:
		return h.Bands[0].T.Unix()
	}
	return 0
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// round keeps 4 significant digits past the integer part: enough for a
// chart, and a week of buckets stays small.
func round(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	p := math.Pow(10, math.Max(0, 3-math.Floor(math.Log10(math.Abs(v)))))
	return math.Round(v*p) / p
}

func lineChart(c *chartSpec, h *engine.EntityHistory) {
	c.Kind = "line"
	n := len(h.Buckets) + 2
	c.T, c.Mean, c.Min, c.Max = make([]int64, 0, n), make(nums, 0, n), make(nums, 0, n), make(nums, 0, n)
	add := func(t time.Time, mean, lo, hi float64) {
		if !finite(mean) || !finite(lo) || !finite(hi) {
			return // JSON has no such number; nothing stores one either
		}
		c.T = append(c.T, t.Unix())
		c.Mean, c.Min, c.Max = append(c.Mean, round(mean)), append(c.Min, round(lo)), append(c.Max, round(hi))
	}
	if h.Start != nil && (len(h.Buckets) == 0 || h.Buckets[0].T.After(h.From)) {
		if f, ok := h.Start.Value.(float64); ok {
			add(h.From, f, f, f)
		}
	}
	lo, hi, last := math.Inf(1), math.Inf(-1), math.NaN()
	for _, b := range h.Buckets {
		add(b.T, b.Mean, b.Min, b.Max)
		lo, hi, last = math.Min(lo, b.Min), math.Max(hi, b.Max), b.Mean
	}
	if len(c.T) > 0 && !math.IsNaN(last) {
		add(h.To, last, last, last) // held to the end (the last bucket's mean)
	} else if len(c.T) > 0 {
		add(h.To, c.Mean[0], c.Mean[0], c.Mean[0])
	}
	// Sparse buckets are values held between rare changes (a setpoint):
	// steps; dense ones are a measurement: a line.
	if slots := h.To.Sub(h.From).Seconds() / float64(max(h.BucketSeconds, 1)); float64(len(h.Buckets)) < slots/2 {
		c.Step = true
	}
	switch {
	case len(h.Buckets) > 0:
		c.Summary = fmtNum(lo) + " to " + fmtNum(hi) + unitSuffix(c.Unit) + ", " + changes(h.Count)
	case len(c.T) > 0:
		c.Summary = "held " + fmtNum(c.Mean[0]) + unitSuffix(c.Unit) + ", no change"
	default:
		c.Summary = "nothing recorded"
	}
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

func bandChart(c *chartSpec, h *engine.EntityHistory) {
	c.Kind = "band"
	idx := map[string]int64{}
	vi := func(v any) int64 {
		t := compactJSON(v)
		i, ok := idx[t]
		if !ok {
			i = int64(len(c.Values))
			idx[t] = i
			c.Values = append(c.Values, liveShown(v))
		}
		return i
	}
	from, to := h.From.Unix(), h.To.Unix()
	cur, curT, have := int64(0), from, false
	if h.Start != nil {
		cur, have = vi(h.Start.Value), true
	}
	emit := func(t int64, n int64) {
		if have && t > curT {
			c.Segs = append(c.Segs, [4]int64{curT, t, cur, n})
		}
	}
	for _, ch := range h.Changes {
		t := ch.T.Unix()
		emit(t, 1)
		cur, curT, have = vi(ch.Value), t, true
	}
	w := h.BucketSeconds
	for _, b := range h.Bands { // too many changes to draw: one segment per bucket
		t := b.T.Unix()
		emit(t, 1)
		cur, curT, have = vi(b.Last), t, true
		c.Segs = append(c.Segs, [4]int64{max(t, from), min(t+w, to), cur, int64(b.N)})
		curT = min(t+w, to)
	}
	emit(to, 1)
	c.Summary = changes(h.Count)
	if h.CountsOf > 0 {
		c.Summary += "; of the latest " + itoa(h.CountsOf)
	}
	for k, n := range sortedCounts(h.Counts) {
		c.Summary += ", " + k + " " + itoa(n) + "×"
	}
	if h.Count == 0 && h.Start == nil {
		c.Summary = "nothing recorded"
	}
}

// sortedCounts yields per-value counts (keys as JSON) as the page shows
// values, most frequent first.
func sortedCounts(counts map[string]int) iter.Seq2[string, int] {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return func(yield func(string, int) bool) {
		for _, k := range keys {
			var v any
			if json.Unmarshal([]byte(k), &v) != nil {
				v = k
			}
			if !yield(compactJSON(v), counts[k]) {
				return
			}
		}
	}
}

func changes(n int) string {
	if n == 1 {
		return "1 change"
	}
	return itoa(n) + " changes"
}

func unitSuffix(u string) string {
	if u == "" {
		return ""
	}
	return " " + u
}

func fmtNum(v float64) string { return compactJSON(round(v)) }

func itoa(n int) string { return compactJSON(n) }

// firingMarks turns a rule's firings into timeline marks, oldest first.
func firingMarks(runs []engine.Run, from, to time.Time) []firingMark {
	out := make([]firingMark, 0, len(runs))
	for i := len(runs) - 1; i >= 0; i-- {
		r := runs[i]
		if r.Started.Before(from) || r.Started.After(to) {
			continue
		}
		out = append(out, firingMark{T: r.Started.Unix(), Status: statusText(r.Status), Class: statusClass(r.Status, r.OK), Run: r.ID})
	}
	return out
}

// tzName is the house's time zone for the charts, as chartZone names it.
func (s *server) tzName() string { return chartZone(s.e.Config().TimeZone, s.e.Now()) }

// ruleTimeline is the rule page's history: the firings of the range on a
// lane of their own and over the history of every state the rule's
// triggers and conditions read, the picture of "why (not)".
func (s *server) ruleTimeline(ctx context.Context, name string, q url.Values) (historyView, error) {
	h := historyView{TZ: s.tzName(), Lane: true, Empty: "This rule reads no state."}
	reads, err := s.e.RuleReads(ctx, name)
	if err != nil {
		return h, err
	}
	var states []*pilotage.Entry
	for _, id := range reads {
		res, err := s.e.Lookup(ctx, engine.LookupRequest{Verb: "get", ID: id})
		if err == nil {
			states = append(states, res.(*engine.GetResponse).Entry)
		}
	}
	from, to, err := s.chartsIn(ctx, &h, q, "/rules/"+url.PathEscape(name), states)
	if err != nil {
		return h, err
	}
	// Stored firings are bounded per rule and status (50 each by
	// default): the newest few hundred cover any range.
	runs, err := s.e.ListRuns(ctx, engine.RunFilter{Rule: name, Kind: engine.KindFiring, Limit: 500})
	if err != nil {
		return h, err
	}
	h.Chart.Firings = firingMarks(runs, from, to)
	h.LaneSummary = laneSummary(h.Chart.Firings)
	return h, nil
}

func laneSummary(fs []firingMark) string {
	if len(fs) == 0 {
		return "no firing in this range"
	}
	counts := map[string]int{}
	var order []string
	for _, f := range fs {
		if counts[f.Status] == 0 {
			order = append(order, f.Status)
		}
		counts[f.Status]++
	}
	sort.Strings(order)
	out := itoa(len(fs)) + " firings:"
	for i, st := range order {
		if i > 0 {
			out += ","
		}
		out += " " + itoa(counts[st]) + " " + st
	}
	return out
}
