package web

import (
	"context"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/engine"
)

// logPageSize is how many entries a logbook page shows; logPanelSize how
// many a device's or rule's page shows of its own.
const (
	logPageSize  = 50
	logPanelSize = 15
)

// logbookView is a logbook list: the whole logbook page, or the panel on a
// device's or rule's page (Fixed names what the panel is about).
type logbookView struct {
	Entries []logRow
	Next    string // link to older entries ("" = none)
	Newest  string // link back to the newest ("" = this is the newest)
	All     string // the panel's link to the logbook page
	// The filters, as data attributes for the live script.
	Kind, Device, Area, Rule string
	Empty                    string
}

// logRow is one entry as the list shows it.
type logRow struct {
	engine.LogEntry
	Class string // the badge's class
	At    template.HTML
}

// logbookData is the logbook page: the list and the filters' choices.
type logbookData struct {
	List     logbookView
	Kinds    []engine.LogKind
	Devices  []string
	Areas    []string
	Rules    []string
	Filtered bool
}

func (s *server) logRows(entries []engine.LogEntry) []logRow {
	out := make([]logRow, len(entries))
	for i, en := range entries {
		out[i] = logRow{LogEntry: en, Class: logClass(en), At: s.clock.tag(en.Time, false)}
	}
	return out
}

// logClass colours an entry: failures and losses red, returns green.
func logClass(en engine.LogEntry) string {
	switch en.Status {
	case "offline", "declined", "failed", "error", "timeout", "denied":
		return "st-bad"
	case "online", "success", "approved", "installed", "enabled":
		return "st-ok"
	}
	if en.Kind == "broker" && strings.Contains(en.Text, "lost") {
		return "st-bad"
	}
	return "st-idle"
}

// logQuery reads the logbook page's filters and cursor.
func logQuery(q url.Values) engine.LogQuery {
	lq := engine.LogQuery{Kind: q.Get("kind"), Device: q.Get("device"), Area: areaParam(q.Get("area")), Rule: q.Get("rule"),
		Cursor: q.Get("cursor"), Limit: logPageSize}
	if !slices.ContainsFunc(engine.LogKinds, func(k engine.LogKind) bool { return k.Name == lq.Kind }) {
		lq.Kind = ""
	}
	if lq.Area == noArea {
		lq.Area = ""
	}
	return lq
}

// logbookList reads one page of the logbook; base is the page's own link
// (its filters), for paging.
func (s *server) logbookList(ctx context.Context, q engine.LogQuery, base url.Values, path string) (logbookView, error) {
	p, err := s.e.Logbook(ctx, q)
	if err != nil {
		return logbookView{}, err
	}
	v := logbookView{Entries: s.logRows(p.Entries), Kind: q.Kind, Device: q.Device, Area: q.Area, Rule: q.Rule}
	link := func(cursor string) string {
		u := url.Values{}
		for k, vs := range base {
			if k != "cursor" && len(vs) > 0 && vs[0] != "" {
				u.Set(k, vs[0])
			}
		}
		if cursor != "" {
			u.Set("cursor", cursor)
		}
		if len(u) == 0 {
			return path
		}
		return path + "?" + u.Encode()
	}
	if p.Next != "" {
		v.Next = link(p.Next)
	}
	if q.Cursor != "" {
		v.Newest = link("")
	}
	return v, nil
}

func (s *server) logbookPage(w http.ResponseWriter, r *http.Request, ss *session) {
	ctx := ss.ctx(r)
	q := logQuery(r.URL.Query())
	v, err := s.logbookList(ctx, q, r.URL.Query(), "/logbook")
	switch {
	case errors.Is(err, engine.ErrBadCursor):
		s.fail(w, r, ss, http.StatusBadRequest, "That logbook page link is malformed: start from the newest entries.", nil)
		return
	case err != nil:
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the logbook failed.", err)
		return
	}
	d := logbookData{List: v, Kinds: engine.LogKinds, Filtered: q.Kind != "" || q.Device != "" || q.Area != "" || q.Rule != ""}
	if d.Devices, d.Areas, err = s.logDevices(ctx); err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the catalog failed.", err)
		return
	}
	rules, err := s.e.ListRules(ctx, 0)
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Listing the rules failed.", err)
		return
	}
	for _, ri := range rules {
		d.Rules = append(d.Rules, ri.Name)
	}
	d.List.Empty = "Nothing is in the logbook yet."
	if d.Filtered {
		d.List.Empty = "Nothing in the logbook matches."
	}
	s.render(w, r, ss, "logbook", page{Title: "Logbook", Nav: "logbook", Live: "logbook", Data: d})
}

// logDevices lists the visible devices and their areas, for the filters.
func (s *server) logDevices(ctx context.Context) (devs, areas []string, err error) {
	entries, err := s.visibleEntries(ctx)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	for _, dv := range s.groupDevices(ctx, entries) {
		if dv.Channel {
			continue
		}
		devs = append(devs, dv.Entry.ID)
		if dv.Area != "" && !seen[dv.Area] {
			seen[dv.Area] = true
			areas = append(areas, dv.Area)
		}
	}
	sort.Strings(devs)
	sort.Strings(areas)
	return devs, areas, nil
}

// logPanel is the logbook of one device or rule, for its page.
func (s *server) logPanel(ctx context.Context, q engine.LogQuery) (logbookView, error) {
	q.Limit = logPanelSize
	v, err := s.logbookList(ctx, q, nil, "/logbook")
	u := url.Values{}
	if q.Device != "" {
		u.Set("device", q.Device)
	}
	if q.Rule != "" {
		u.Set("rule", q.Rule)
	}
	v.All, v.Next = "/logbook?"+u.Encode(), ""
	v.Empty = "Nothing about it is in the logbook yet."
	return v, err
}

// logMsg is a logbook entry as the live script inserts it.
type logMsg struct {
	Kind   string `json:"kind"`
	Text   string `json:"text"`
	Device string `json:"device,omitempty"`
	Area   string `json:"area,omitempty"`
	Rule   string `json:"rule,omitempty"`
	RunID  string `json:"run_id,omitempty"`
	Class  string `json:"class"`
	When   string `json:"when"`
	Full   string `json:"full"`
	Time   string `json:"time"`
}

// watchLogbook subscribes a stream to the logbook when its page shows one
// (?logbook=1); the channel is nil (never ready) otherwise.
func (st *stream) watchLogbook(r *http.Request) (<-chan engine.LogEntry, func()) {
	if r.URL.Query().Get("logbook") != "1" {
		return nil, func() {}
	}
	return st.s.e.WatchLogbook(sseEngineBuffer)
}

// logEntry relays a logbook entry the session's principal may see.
func (st *stream) logEntry(en engine.LogEntry) error {
	if !st.s.e.LogVisible(st.ctx, en) {
		return nil
	}
	c := st.s.clock
	return st.send("logbook", logMsg{Kind: en.Kind, Text: en.Text, Device: en.Device, Area: en.Area, Rule: en.Rule, RunID: en.RunID,
		Class: logClass(en), When: c.when(en.Time), Full: c.full(en.Time), Time: en.Time.UTC().Format(time.RFC3339Nano)})
}
