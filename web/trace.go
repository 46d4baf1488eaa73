package web

// What the run page adds to a trace so that it can be followed: when each
// step started and how long it took, the values conditions read, the
// nesting of arms and loop bodies, what kind of run it was, and the runs
// of the same rule before and after it.

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strconv"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
)

// maxTraceDepth is the deepest indentation the page draws (deeper steps
// are drawn at it; their ids still name the nesting).
const maxTraceDepth = 6

// maxReadRows bounds the values read the page lists for one step (the
// engine records at most 12 and a note).
const maxReadRows = 16

// maxReadsBytes bounds the JSON of one entry's reads the page decodes.
const maxReadsBytes = 16 << 10

// readRow is one value a condition or branch read.
type readRow struct{ What, Value string }

// runNeighbour is the run of the same rule just before or after this one.
type runNeighbour struct {
	ID, Status, Kind string
	OK               bool
	Started          time.Time
}

// runKindHeading is how the page names a run of each kind.
var runKindHeading = map[string]string{
	engine.KindTest:   "Test run",
	engine.KindFiring: "Firing",
	engine.KindDeploy: "Deploy",
	engine.KindManual: "Manual run",
}

// heading names the run: its kind, and for a firing the trigger that fired.
func (d *runData) heading() {
	d.Heading = runKindHeading[d.Kind]
	if d.Heading == "" {
		d.Heading = "Run"
	}
	steps := d.Trace.Steps
	if len(steps) > 0 && steps[0].ID == "triggers" && len(steps[0].Decisions) > 0 {
		dc := steps[0].Decisions[0]
		d.Trigger, d.Because = dc.Took, clip(dc.Because)
	}
}

// neighbours finds the runs of the same rule just older and newer than
// this one (what the page's previous/next links go to).
func (s *server) neighbours(ctx context.Context, d *runData) {
	if d.Rule == "" {
		return
	}
	pick := func(f engine.RunFilter) *runNeighbour {
		runs, err := s.e.ListRuns(ctx, f)
		if err != nil {
			// The page still shows the run; the links say nothing.
			s.log.Warn("listing a rule's runs around a run", "rule", d.Rule, "run", d.RunID, "err", err)
			d.NavFailed = true
			return nil
		}
		if len(runs) == 0 {
			return nil
		}
		r := runs[0]
		return &runNeighbour{ID: r.ID, Status: r.Status, Kind: r.Kind, OK: r.OK, Started: r.Started}
	}
	d.Older = pick(engine.RunFilter{Rule: d.Rule, Before: d.RunID, Limit: 1})
	d.Newer = pick(engine.RunFilter{Rule: d.Rule, After: d.RunID, Limit: 1})
}

// timing gives each listed step its start and duration. A step starts at
// its t_ms; it lasts until the next entry that is not nested in it starts
// (steps run one after another), the last ones until the run's end.
func (d *runData) timing(c clock, steps []pilotage.TraceStep, endMs float64) {
	depth := d.depth
	ends := make([]float64, len(steps))
	open := []int{} // entries whose end is not known yet, outermost first
	for i, st := range steps {
		for len(open) > 0 && depth[open[len(open)-1]] >= depth[i] {
			ends[open[len(open)-1]] = tms(st)
			open = open[:len(open)-1]
		}
		open = append(open, i)
	}
	for _, i := range open {
		ends[i] = max(endMs, tms(steps[i]))
	}
	for k := range d.Steps {
		row := &d.Steps[k]
		i := row.N - 1
		if steps[i].TMs == nil {
			continue
		}
		at := *steps[i].TMs
		if d.Kind == engine.KindTest || d.Started.IsZero() {
			row.Start = "+" + formatOffset(at)
			row.StartTitle = "offset from the run's start (a test run's virtual clock)"
		} else {
			t := d.Started.Add(time.Duration(at * float64(time.Millisecond)))
			row.Start = t.In(c.loc).Format("15:04:05.000")
			row.StartTitle = c.full(t)
		}
		if endMs >= 0 || i < len(steps)-1 {
			row.Took = formatDuration(ends[i] - at)
		}
	}
}

func tms(st pilotage.TraceStep) float64 {
	if st.TMs == nil {
		return 0
	}
	return *st.TMs
}

// depths is each entry's nesting: the entries of its parent chain (the
// ids' iterations and call levels for a trace recorded without parents).
func depths(steps []pilotage.TraceStep) []int {
	out := make([]int, len(steps))
	at := make(map[string]int, len(steps))
	withParents := false
	for i, st := range steps {
		if st.Parent != "" {
			withParents = true
			if p, ok := at[st.Parent]; ok {
				out[i] = out[p] + 1
			}
		}
		at[st.ID] = i
	}
	if !withParents {
		for i, st := range steps {
			out[i] = stepDepth(stepSegments(st.ID))
		}
	}
	return out
}

// runEndMs is when the run ended on the clock of its t_ms, or -1 when
// that is not known: a test run's own count (its virtual clock), else
// the stored start and end.
func runEndMs(tr *pilotage.TraceResponse, meta engine.Run) float64 {
	if v, ok := tr.Trace.Stats["elapsed_ms"].(float64); ok {
		return v
	}
	if meta.Kind == engine.KindTest || meta.Started.IsZero() || meta.Ended.IsZero() {
		return -1
	}
	return float64(meta.Ended.Sub(meta.Started)) / float64(time.Millisecond)
}

// readsOf lists what a condition's or branch's entry read (its input,
// see the closed-sets guide), sorted by what was read; nil for other
// entries.
func readsOf(st pilotage.TraceStep, trigger string) []readRow {
	if st.ID == trigger || st.ID == "triggers" || st.Parent == "triggers" {
		return nil // a trigger's input is its simulation
	}
	if !isBool(st.Output) && len(st.Decisions) == 0 {
		return nil // a condition's output is a boolean, a branch has decisions
	}
	m, ok := st.Input.(map[string]any)
	if !ok {
		// The engine records a few cut values; anything larger is not
		// what it records as read and is shown as an input instead.
		raw, isRaw := st.Input.(json.RawMessage)
		if !isRaw || len(raw) > maxReadsBytes || json.Unmarshal(raw, &m) != nil {
			return nil
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]readRow, 0, min(len(keys), maxReadRows))
	for _, k := range keys[:min(len(keys), maxReadRows)] {
		out = append(out, readRow{What: clip(k), Value: clip(compactJSON(m[k]))})
	}
	return out
}

// isBool reports whether a trace value (decoded, or raw JSON as stored) is
// a boolean.
func isBool(v any) bool {
	switch x := v.(type) {
	case bool:
		return true
	case json.RawMessage:
		s := bytes.TrimSpace(x)
		return bytes.Equal(s, []byte("true")) || bytes.Equal(s, []byte("false"))
	}
	return false
}

// formatDuration is a step's duration: ms below 10 s, then s, then min.
func formatDuration(ms float64) string {
	switch {
	case ms < 0:
		return ""
	case ms < 60_000:
		return formatMS(&ms)
	}
	return formatOffset(ms)
}

// formatOffset is ms as 1h2m3.5s (time.Duration's form, cut to 0.1 s).
func formatOffset(ms float64) string {
	if ms < 1000 {
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	}
	return time.Duration(ms * float64(time.Millisecond)).Round(100 * time.Millisecond).String()
}
