package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/storage"
)

// ruleRow is one line of the Rules page.
type ruleRow struct {
	engine.RuleInfo
	Summary string
	Last    *engine.FiringInfo
}

func (s *server) rulesPage(w http.ResponseWriter, r *http.Request, ss *session) {
	list, err := s.e.ListRules(ss.ctx(r), 1)
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Listing the rules failed.", err)
		return
	}
	rows := make([]ruleRow, len(list))
	for i, ri := range list {
		rows[i] = ruleRow{RuleInfo: ri, Summary: triggerSummary(ri)}
		if len(ri.LastFirings) > 0 {
			rows[i].Last = &ri.LastFirings[0]
		}
	}
	s.render(w, r, ss, "rules", page{Title: "Rules", Nav: "rules", Live: "rules", Data: rows})
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
	Versions []storage.Program
	Activity []storage.Run
	Triggers []string
	MoreRuns string // link to the full run list for this rule
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
	activity, err := s.e.ListRuns(ctx, storage.RunFilter{Rule: name, Limit: 25})
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Listing the rule's firings failed.", err)
		return
	}
	d := ruleData{Rule: ri, Summary: triggerSummary(ri), Program: prettyJSON(ri.Program), Versions: versions, Activity: activity,
		MoreRuns: "/runs?rule=" + url.QueryEscape(name)}
	if ri.Plan != nil {
		for i, st := range ri.Plan.Steps {
			d.Steps = append(d.Steps, planStep{PlanStep: st, N: i + 1})
		}
	}
	for _, t := range ri.Triggers {
		d.Triggers = append(d.Triggers, t.ID)
	}
	if len(d.Triggers) == 0 {
		d.Triggers = programTriggerIDs(ri.Program)
	}
	s.render(w, r, ss, "rule", page{Title: ri.Name, Nav: "rules", Live: "rule:" + ri.Name, Data: d})
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
		if _, err = s.e.SetRuleEnabled(ctx, name, on); err == nil {
			ss.setFlash("Rule " + name + map[bool]string{true: " enabled: it fires on its triggers again.", false: " disabled: its triggers are disarmed."}[on])
		}
	case "remove":
		if err = s.e.RemoveRule(ctx, name); err == nil {
			ss.setFlash("Rule " + name + " removed. Its promoted versions and past runs are kept.")
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
	input, _ := json.Marshal(map[string]any{"scenario": sc})
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
	return "/runs/" + url.PathEscape(resp.RunID), nil
}
