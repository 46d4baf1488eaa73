package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/pilotage"
)

// ruleRow is one line of the Rules page.
type ruleRow struct {
	engine.RuleInfo
	Summary string
	Last    *pilotage.FiringInfo
	// Who: logins are configured, so a column says who installed it.
	Who bool
	// Hidden: the rule is another principal's, whose firings (runs
	// belong to the principal they ran as) this login may not see, so
	// "never" would be a guess.
	Hidden bool
}

// firingsHidden reports whether the login may not see ri's firings.
func firingsHidden(ss *session, ri engine.RuleInfo) bool {
	return !ss.principal.Admin && ri.Principal != "" && ri.Principal != ss.principal.Name
}

// rulesPerPage bounds one Rules page.
const rulesPerPage = 200

// rulesData is what the Rules page template gets.
type rulesData struct {
	Rows       []template.HTML
	Who        bool // logins are configured: the Installed by column
	Total      int
	From, To   int
	Prev, Next int // page numbers, 0 = none
	Paginated  bool
	// The empty state: where to connect an assistant, and whether this
	// login may install rules at all.
	MCP       string
	CanDeploy bool
}

func (s *server) rulesPage(w http.ResponseWriter, r *http.Request, ss *session) {
	ctx := ss.ctx(r)
	all, err := s.e.ListRules(ctx, 0)
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Listing the rules failed.", err)
		return
	}
	pageNo, _ := strconv.Atoi(r.URL.Query().Get("page"))
	if pageNo < 1 {
		pageNo = 1
	}
	from := (pageNo - 1) * rulesPerPage
	if from > len(all) {
		from = len(all)
	}
	to := min(from+rulesPerPage, len(all))
	list := all[from:to]
	last, err := s.lastFirings(ctx, list)
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Listing the last firings failed.", err)
		return
	}
	rows := make([]template.HTML, len(list))
	for i, ri := range list {
		row := ruleRow{RuleInfo: ri, Last: last[ri.Name], Who: len(s.o.Principals) > 0, Hidden: firingsHidden(ss, ri)}
		if rows[i], err = s.rows.html(s.pages["rules"], row); err != nil {
			s.fail(w, r, ss, http.StatusInternalServerError, "Rendering the rules failed.", err)
			return
		}
	}
	s.rows.prune(all)
	d := rulesData{Who: len(s.o.Principals) > 0, Rows: rows, Total: len(all), From: from + 1, To: to, Paginated: len(all) > rulesPerPage,
		MCP: mcpURL(r), CanDeploy: ss.principal.Deploy}
	if pageNo > 1 {
		d.Prev = pageNo - 1
	}
	if to < len(all) {
		d.Next = pageNo + 1
	}
	s.render(w, r, ss, "rules", page{Title: "Rules", Nav: "rules", Live: "rules", Data: d})
}

// rowCache keeps each rule's rendered row until something it shows
// changes: with a thousand rules, template execution is most of the
// page's cost, and rows rarely change between two loads.
type rowCache struct {
	mu sync.Mutex
	m  map[string]cachedRow
}

type cachedRow struct {
	key  string
	html template.HTML
}

// rowKey names everything a row shows; the program ref stands for the
// description, triggers and risk, which a ref fixes.
func rowKey(row ruleRow) string {
	ri, last := row.RuleInfo, row.Last
	var b strings.Builder
	b.WriteString(strconv.FormatBool(row.Who) + strconv.FormatBool(row.Hidden) + ri.Principal + "\x00")
	b.WriteString(ri.Status + "\x00" + ri.Broken + "\x00" + ri.ProgramRef + "\x00" + string(ri.MaxRisk) + "\x00" + strings.Join(ri.Missing, ",") + "\x00")
	if last != nil {
		b.WriteString(last.RunID + "\x00" + last.Status)
	}
	b.WriteString("\x00")
	if ri.NextFire != nil {
		b.WriteString(ri.NextFire.Format(time.RFC3339Nano))
	}
	return b.String()
}

func (c *rowCache) html(t *template.Template, row ruleRow) (template.HTML, error) {
	ri := row.RuleInfo
	key := rowKey(row)
	c.mu.Lock()
	cr, ok := c.m[ri.Name]
	c.mu.Unlock()
	if ok && cr.key == key {
		return cr.html, nil
	}
	var buf bytes.Buffer
	row.Summary = triggerSummary(ri)
	if err := t.ExecuteTemplate(&buf, "row", row); err != nil {
		return "", err
	}
	h := template.HTML(buf.String()) // produced by html/template: escaped
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedRow{}
	}
	c.m[ri.Name] = cachedRow{key: key, html: h}
	c.mu.Unlock()
	return h, nil
}

// prune drops rows of rules that are gone, once the cache has grown past
// twice the listing (listings are scoped, so one caller's list is not all).
func (c *rowCache) prune(list []engine.RuleInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) <= 2*len(list)+64 {
		return
	}
	keep := make(map[string]bool, len(list))
	for _, ri := range list {
		keep[ri.Name] = true
	}
	for name := range c.m {
		if !keep[name] {
			delete(c.m, name)
		}
	}
}

// recentFirings is how many of the newest firings one query reads to find
// the rules' last firings; rules not among them are asked one by one.
const recentFirings = 1000

// lastFirings finds each rule's newest firing the caller may see (runs
// are scoped like the run list: a guest sees its own). One query covers the
// rules that fired recently, so a busy house does not cost a query per rule.
func (s *server) lastFirings(ctx context.Context, list []engine.RuleInfo) (map[string]*pilotage.FiringInfo, error) {
	out := make(map[string]*pilotage.FiringInfo, len(list))
	if len(list) == 0 {
		return out, nil
	}
	runs, err := s.e.ListRuns(ctx, engine.RunFilter{Kind: engine.KindFiring, Limit: recentFirings})
	if err != nil {
		return nil, err
	}
	for _, run := range runs {
		if _, ok := out[run.Rule]; !ok {
			out[run.Rule] = &pilotage.FiringInfo{RunID: run.ID, Status: run.Status, OK: run.OK, Started: run.Started}
		}
	}
	if len(runs) < recentFirings {
		return out, nil // every stored firing was read
	}
	for _, ri := range list {
		if _, ok := out[ri.Name]; ok {
			continue
		}
		one, err := s.e.ListRuns(ctx, engine.RunFilter{Rule: ri.Name, Kind: engine.KindFiring, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(one) == 1 {
			out[ri.Name] = &pilotage.FiringInfo{RunID: one[0].ID, Status: one[0].Status, OK: one[0].OK, Started: one[0].Started}
		}
	}
	return out, nil
}

// planStep is a plan step with its nesting made explicit for display.
type planStep struct {
	pilotage.PlanStep
	N int
}

type ruleData struct {
	Rule     engine.RuleInfo
	Summary  string
	Program  string
	Steps    []planStep
	Versions []engine.RuleVersion
	Activity []engine.Run
	Triggers []string
	MoreRuns string // link to the full run list for this rule
	Kept     string // which firings are kept: what is listed is all there is
	History  historyView
	Logbook  logbookView
	// CanDeploy: the login may deploy, so restore a version.
	CanDeploy bool
	// Offline: devices its triggers and conditions read that say they
	// are offline now.
	Offline []staleView
	// Hidden: its firings are another principal's runs, not visible here.
	Hidden bool
}

func (s *server) rulePage(w http.ResponseWriter, r *http.Request, ss *session) {
	name := r.PathValue("name")
	ctx := ss.ctx(r)
	ri, err := s.e.GetRule(ctx, name, 0)
	if errors.Is(err, engine.ErrRuleNotFound) {
		s.fail(w, r, ss, http.StatusNotFound, "No installed rule called "+name+" (it may have been removed, or be outside your scope).", nil)
		return
	}
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the rule failed.", err)
		return
	}
	versions, err := s.e.RuleVersions(ctx, name)
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the rule's versions failed.", err)
		return
	}
	activity, err := s.e.ListRuns(ctx, engine.RunFilter{Rule: name, Kind: "firing", Limit: 25})
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Listing the rule's firings failed.", err)
		return
	}
	d := ruleData{Rule: ri, Summary: triggerSummary(ri), Program: prettyJSON(ri.Program), Versions: versions, Activity: activity,
		MoreRuns: "/runs?rule=" + url.QueryEscape(name), Kept: keptText(s.e.Config()), CanDeploy: ss.principal.Deploy, Hidden: firingsHidden(ss, ri)}
	if ri.Plan != nil {
		for i, st := range ri.Plan.Steps {
			d.Steps = append(d.Steps, planStep{PlanStep: st, N: i + 1})
		}
	}
	for _, t := range ri.Triggers {
		d.Triggers = append(d.Triggers, t.ID)
	}
	if d.History, err = s.ruleTimeline(ctx, name, r.URL.Query()); err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the rule's timeline failed.", err)
		return
	}
	if d.Logbook, err = s.logPanel(ctx, engine.LogQuery{Rule: name}); err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the logbook failed.", err)
		return
	}
	if d.Offline, err = s.offlineReads(ctx, name); err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the logbook failed.", err)
		return
	}
	if len(d.Triggers) == 0 {
		d.Triggers = programTriggerIDs(ri.Program)
	}
	s.render(w, r, ss, "rule", page{Title: ri.Name, Nav: "rules", Live: "rule:" + ri.Name, Charts: true, Data: d})
}

func programTriggerIDs(raw json.RawMessage) []string {
	var prog struct {
		Triggers []struct {
			ID string `json:"id"`
		} `json:"triggers"`
	}
	_ = json.Unmarshal(raw, &prog)
	var ids []string
	for _, t := range prog.Triggers {
		if t.ID != "" {
			ids = append(ids, t.ID)
		}
	}
	return ids
}

// ruleAction handles the rule detail's buttons; each answers with a
// redirect (post/redirect/get) and a flash message.
func (s *server) ruleAction(w http.ResponseWriter, r *http.Request, ss *session) {
	name := r.PathValue("name")
	ctx := ss.ctx(r)
	back := "/rules/" + url.PathEscape(name)
	var err error
	switch r.PathValue("action") {
	case "enable", "disable":
		on := r.PathValue("action") == "enable"
		var ri engine.RuleInfo
		if ri, err = s.e.SetRuleEnabled(ctx, name, on); err == nil {
			ss.setFlash("Rule " + name + map[bool]string{true: " enabled: it fires on its triggers again.", false: " disabled: its triggers are disarmed."}[on] + cancelledText(ri.CancelledRuns))
		}
	case "remove":
		var n int
		if n, err = s.e.RemoveRule(ctx, name); err == nil {
			ss.setFlash("Rule " + name + " removed. Its promoted versions and past runs are kept." + cancelledText(n))
			back = "/"
		}
	case "test":
		var to string
		if to, err = s.testRun(r, ss, name); err == nil {
			back = to
		}
	default:
		s.fail(w, r, ss, http.StatusNotFound, "Unknown action.", nil)
		return
	}
	if errors.Is(err, engine.ErrRuleNotFound) {
		s.fail(w, r, ss, http.StatusNotFound, "No installed rule called "+name+".", nil)
		return
	}
	if errors.Is(err, engine.ErrNotAllowed) {
		s.fail(w, r, ss, http.StatusForbidden, "Your login may look at this rule but not change it.", nil)
		return
	}
	if err != nil {
		var re *pilotage.RequestError
		if !errors.As(err, &re) {
			s.fail(w, r, ss, http.StatusInternalServerError, "The action failed.", err)
			return
		}
		ss.setFlash("Refused: " + re.Message)
	}
	redirect(w, r, back)
}

// testRun runs the rule's promoted program with test_run and the chosen
// trigger; it returns where to go next (the run's trace, or back to the
// rule with a flash saying why nothing ran).
func (s *server) testRun(r *http.Request, ss *session, name string) (string, error) {
	ctx := ss.ctx(r)
	ri, err := s.e.GetRule(ctx, name, 0)
	if err != nil {
		return "", err
	}
	sc := map[string]any{}
	if t := r.PostFormValue("trigger"); t != "" {
		sc["trigger"] = t
	}
	if v := strings.TrimSpace(r.PostFormValue("value")); v != "" {
		var parsed any
		if json.Unmarshal([]byte(v), &parsed) != nil {
			parsed = v // plain text is a string value
		}
		sc["value"] = parsed
	}
	// The rule's install params, plus the scenario (the input convention).
	in := map[string]any{}
	if len(ri.Params) > 0 {
		_ = json.Unmarshal(ri.Params, &in)
	}
	in["scenario"] = sc
	input, _ := json.Marshal(in)
	if err := mcpserver.InputTooLarge(s.e.Config().Limits, "input", input); err != nil {
		return "", err // refused whole, never stored
	}
	resp, err := s.e.Execute(ctx, engine.ExecuteRequest{ProgramRef: ri.ProgramRef, TestRun: true, Input: input})
	if err != nil {
		return "", err
	}
	back := "/rules/" + url.PathEscape(name)
	if len(resp.Diagnostics) > 0 || resp.Trace == nil && !resp.Outcome.OK {
		msg := "Test run refused (" + statusText(resp.Outcome.Status) + "): " + resp.Outcome.Error
		for _, d := range resp.Diagnostics {
			msg += "; " + strings.TrimSpace(d.Path+" "+d.Message)
		}
		ss.setFlash(msg)
		return back, nil
	}
	ss.setFlash("Test run finished: " + statusText(resp.Outcome.Status) + ". Nothing was sent to any device.")
	return "/runs/" + url.PathEscape(resp.RunID) + "?rule=" + url.QueryEscape(name), nil
}

// mcpURL is this server's MCP endpoint as the browser reached it.
func mcpURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/mcp"
}

// cancelledText is the flash's sentence on runs a disable or remove
// cancelled ("" for none).
func cancelledText(n int) string {
	if n == 0 {
		return ""
	}
	return " " + engine.CancelledNote(n) + "."
}

// keptText says which firings of a rule are kept, so that older ones
// missing from the list are not a surprise (they were removed to fit).
func keptText(c engine.Config) string {
	l := c.Limits.WithDefaults()
	return fmt.Sprintf("Firings kept: the last %d of each outcome, for %d days, within %d MiB for this rule and %d MiB for all "+
		"the rules of a principal other than the owner (limits.max_stored_rule_bytes, limits.max_stored_firing_bytes); older ones are removed.",
		c.KeepPerStatus, int(c.Retention.Hours()/24), l.MaxStoredRuleBytes>>20, l.MaxStoredFiringBytes>>20)
}
