package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"
	"unicode/utf8"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
)

// runsPageSize is the Runs page's page size.
const runsPageSize = 50

type runsData struct {
	Runs     []engine.Run
	Who      bool // logins are configured: a column says whom each ran as
	Outcome  string
	Kind     string
	Rule     string
	Before   string
	After    string
	Next     string // link to the next (older) page, "" on the last
	Prev     string // link to the previous (newer) page, "" on the newest
	Outcomes []string
}

// runStatuses offered by the outcome filter (besides ok and failed).
var runStatuses = []string{"success", "conditions_not_met", "skipped", "throttled", "stopped", "failed", "partial", "timeout",
	"broken", "cancelled", "interrupted", "not_connected", "not_acknowledged", "limit_exceeded", "denied", "validation_error", "running"}

func (s *server) runsPage(w http.ResponseWriter, r *http.Request, ss *session) {
	q := r.URL.Query()
	d := runsData{Who: len(s.o.Principals) > 0, Outcome: q.Get("outcome"), Kind: q.Get("kind"), Rule: q.Get("rule"), Before: q.Get("before"), After: q.Get("after"), Outcomes: runStatuses}
	if d.Before != "" && d.After != "" {
		d.After = "" // a hand-made URL: older wins
	}
	f, ok := d.filter()
	if !ok {
		s.fail(w, r, ss, http.StatusBadRequest, "Unknown run kind.", nil)
		return
	}
	runs, err := s.e.ListRuns(ss.ctx(r), f)
	if errors.Is(err, engine.ErrBadCursor) {
		s.fail(w, r, ss, http.StatusBadRequest, "That page cursor is not valid.", nil)
		return
	}
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Listing runs failed.", err)
		return
	}
	d.page(runs)
	live := "runs"
	if d.Prev != "" {
		live = "" // a page below the newest does not grow at the top
	}
	s.render(w, r, ss, "runs", page{Title: "Runs", Nav: "runs", Live: live, Data: d})
}

// filter is the page's query; ok is false for an unknown kind.
func (d *runsData) filter() (engine.RunFilter, bool) {
	f := engine.RunFilter{Rule: d.Rule, Before: d.Before, After: d.After, Limit: runsPageSize}
	if d.After != "" {
		f.Limit++ // one more tells whether a newer page exists
	}
	switch d.Kind {
	case "", engine.KindDeploy, engine.KindTest, engine.KindFiring, engine.KindManual:
		f.Kind = d.Kind
	default:
		return f, false
	}
	switch d.Outcome {
	case "":
	case "ok", "failed":
		ok := d.Outcome == "ok"
		f.OK = &ok
	default:
		f.Status = d.Outcome
	}
	return f, true
}

// page keeps the page's runs and links the older and newer pages.
func (d *runsData) page(runs []engine.Run) {
	moreNewer := false
	if d.After != "" && len(runs) > runsPageSize {
		runs, moreNewer = runs[1:], true // keep the runs closest to the cursor
	}
	d.Runs = runs
	link := func(cursor, id string) string {
		nq := url.Values{}
		for k, v := range map[string]string{"outcome": d.Outcome, "kind": d.Kind, "rule": d.Rule, cursor: id} {
			if v != "" {
				nq.Set(k, v)
			}
		}
		return "/runs?" + nq.Encode()
	}
	// Older runs exist past a full page, or past any page reached by going
	// newer; newer runs exist above any page reached by going older, or when
	// the extra run fetched going newer came back.
	if len(runs) > 0 && (len(runs) == runsPageSize || d.After != "") {
		d.Next = link("before", runs[len(runs)-1].ID)
	}
	if len(runs) > 0 && (d.Before != "" || moreNewer) {
		d.Prev = link("after", runs[0].ID)
	}
}

type runData struct {
	*pilotage.TraceResponse
	Rule string
	Kind string
	// Principal is whom the run ran as: a deploy's installer, a firing's
	// rule owner, a manual run's person.
	Principal string
	Started   time.Time
	// Heading names the run's kind; Trigger and Because say what fired.
	Heading, Trigger, Because string
	Older, Newer              *runNeighbour // the rule's runs around this one
	NavFailed                 bool          // they could not be listed
	Failed                    *traceRow
	Steps                     []traceRow
	// What the page shows of the run's values (see shown); the rest is
	// at Raw, the run's JSON.
	Out       *shownValue
	Raw       string
	Narrated  string
	MoreSteps int   // steps not listed (after the first maxRunRows)
	depth     []int // each entry's nesting (depths)
}

// traceRow is one trace step with its id split into its identity levels.
type traceRow struct {
	pilotage.TraceStep
	N     int // 1-based position, the step's anchor
	Depth int
	// Start is when the step started (a test run: its offset), Took how
	// long it ran; Reads what a condition or branch read.
	Start, StartTitle, Took string
	Reads                   []readRow
	Segs                    []stepSegment
	In, Out                 *shownValue
	Err                     string
	Because                 []string // the decisions' reasons, cut
}

// stepDepth is how deep a trace step is nested: each iteration or
// expansion (#n) and each call level (/) is one level.
func stepDepth(segs []stepSegment) int {
	iters := 0
	for _, sg := range segs {
		if sg.Iter != "" {
			iters++
		}
	}
	return min(max(iters, len(segs)-1), 3)
}

func (s *server) runPage(w http.ResponseWriter, r *http.Request, ss *session) {
	id := r.PathValue("id")
	ctx, done := engine.ServingRuns(ss.ctx(r))
	defer done()
	tr, ok := s.traceFor(ctx, w, r, ss, id) // waits for a run still in the recorder's batch
	if !ok {
		return
	}
	d := runData{TraceResponse: tr}
	d.Started, _ = engine.RunIDTime(tr.RunID)
	meta, err := s.e.RunInfo(ctx, id)
	if err == nil {
		d.Kind, d.Started, d.Principal = meta.Kind, meta.Started, meta.Principal
	}
	if err == nil && meta.Rule != "" {
		d.Rule = meta.Rule
	} else if name := r.URL.Query().Get("rule"); name != "" {
		// A test run started from a rule's page links back to it, if visible.
		if _, err := s.e.GetRule(ctx, name, 0); err == nil {
			d.Rule = name
		}
	}
	d.rows(tr)
	d.heading()
	d.timing(s.clock, tr.Trace.Steps, runEndMs(tr, meta))
	s.neighbours(ctx, &d)
	s.render(w, r, ss, "run", page{Title: d.Heading + " " + tr.RunID, Nav: "runs", Data: d})
}

// rows lists the run's steps for the page, bounded: the first maxRunRows
// and the failed one, each value cut (a run may hold megabytes: its page
// once rendered 24 MB of HTML).
func (d *runData) rows(tr *pilotage.TraceResponse) {
	d.Raw = "/runs/" + url.PathEscape(tr.RunID) + "/json"
	b := &shown{left: maxShownBytes, raw: d.Raw}
	d.Narrated = clip(tr.Narration)
	// Branch and loop entries are logged before their bodies and fail with
	// them, so the last failed step is the cause.
	failed := -1
	for i := len(tr.Trace.Steps) - 1; i >= 0; i-- {
		if !tr.Trace.Steps[i].Outcome.OK {
			failed = i
			break
		}
	}
	d.depth = depths(tr.Trace.Steps)
	trigger := ""
	if st := tr.Trace.Steps; len(st) > 0 && st[0].ID == "triggers" && len(st[0].Decisions) > 0 {
		trigger = st[0].Decisions[0].Took
	}
	for i := range tr.Trace.Steps {
		if i >= maxRunRows && i != failed {
			d.MoreSteps++
			continue
		}
		st := tr.Trace.Steps[i]
		segs := stepSegments(st.ID)
		row := traceRow{TraceStep: st, N: i + 1, Depth: min(d.depth[i], maxTraceDepth), Segs: segs,
			Out: b.show(st.Output), Err: clip(st.Outcome.Error), Reads: readsOf(st, trigger)}
		if row.Reads == nil {
			row.In = b.show(st.Input)
		}
		for _, dc := range st.Decisions {
			row.Because = append(row.Because, clip(dc.Because))
		}
		d.Steps = append(d.Steps, row)
	}
	if failed >= 0 {
		d.Failed = &d.Steps[len(d.Steps)-1]
		for i := range d.Steps {
			if d.Steps[i].N == failed+1 {
				d.Failed = &d.Steps[i]
			}
		}
	}
	d.Out = b.show(tr.Output)
}

// The run page's bounds: the steps it lists, the bytes of indented JSON it
// shows of one value and of all values, the characters of one message.
const (
	maxRunRows      = 1000
	maxValueShown   = 8 << 10
	maxShownBytes   = 256 << 10
	maxMessageShown = 2000
)

// shownValue is what the page shows of a value: its indented JSON, cut
// after More bytes (0: whole), with the raw JSON's address.
type shownValue struct {
	Text string
	More int
	Raw  string
}

// shown hands out the page's byte budget for values.
type shown struct {
	left int
	raw  string
}

func (b *shown) show(v any) *shownValue {
	if v == nil {
		return nil
	}
	raw := rawJSON(v)
	if len(raw) == 0 {
		return nil
	}
	// Only what is shown is indented: a value past the page's budget
	// costs nothing, one over its cap is indented up to the cap.
	text, rest := indentUpTo(raw, min(maxValueShown, max(b.left, 0)))
	b.left -= len(text)
	return &shownValue{Text: text, More: rest, Raw: b.raw}
}

// rawJSON is v's JSON as stored (a trace's values arrive as raw JSON).
func rawJSON(v any) []byte {
	switch x := v.(type) {
	case json.RawMessage:
		return x
	case []byte:
		return x
	}
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(fmt.Sprint(v))
	}
	return b
}

// clip cuts a message to maxMessageShown bytes, saying how much was cut.
func clip(s string) string {
	if len(s) <= maxMessageShown {
		return s
	}
	n := maxMessageShown
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s… (%d bytes more)", s[:n], len(s)-n)
}

// runJSON is a run as JSON (the run page's values in full), for the
// principal who may read it.
func (s *server) runJSON(w http.ResponseWriter, r *http.Request, ss *session) {
	id := r.PathValue("id")
	ctx, done := engine.ServingRuns(ss.ctx(r))
	defer done()
	tr, ok := s.traceFor(ctx, w, r, ss, id)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(tr)
}

// traceFor reads a run for its page or JSON, answering the failure itself:
// 404 for a run the caller may not see, 503 when the server is serving too
// many stored runs at once (limits.max_served_run_bytes).
func (s *server) traceFor(ctx context.Context, w http.ResponseWriter, r *http.Request, ss *session, id string) (*pilotage.TraceResponse, bool) {
	tr, err := s.e.Trace(ctx, engine.TraceRequest{RunID: id})
	var re *pilotage.RequestError
	switch {
	case errors.As(err, &re) && re.Kind == pilotage.ErrResourceExhausted:
		w.Header().Set("Retry-After", "5")
		s.fail(w, r, ss, http.StatusServiceUnavailable, "Run "+id+" cannot be shown right now: "+re.Message, nil)
		return nil, false
	case errors.As(err, &re):
		s.fail(w, r, ss, http.StatusNotFound, "No retained run "+id+" (unknown, expired, or not yours).", nil)
		return nil, false
	case err != nil:
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the run failed.", err)
		return nil, false
	}
	return tr, true
}
