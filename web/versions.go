package web

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
)

// A rule's versions are its promoted programs (every deploy promotes
// one): the rule page lists them with who deployed each and when, this
// file compares two of them and restores one. Restore is a deploy of the
// old program_ref with the rule's current params, through the same risk
// gate as any deploy.

func (s *server) versionRoutes(mux *http.ServeMux) {
	mux.Handle("GET /rules/{name}/diff", s.authed(s.versionDiff))
	mux.Handle("POST /rules/{name}/restore", s.authed(s.versionRestore))
}

// diffData is what the diff page gets.
type diffData struct {
	Rule      engine.RuleInfo
	Versions  []engine.RuleVersion
	From, To  engine.RuleVersion
	Diff      []diffLine
	Same      bool
	CanDeploy bool
}

// versionOf finds ref among vs.
func versionOf(vs []engine.RuleVersion, ref string) (engine.RuleVersion, bool) {
	for _, v := range vs {
		if v.Ref == ref {
			return v, true
		}
	}
	return engine.RuleVersion{}, false
}

// ruleVersions reads the rule and its versions, answering the page's
// failure itself (ok false).
func (s *server) ruleVersions(w http.ResponseWriter, r *http.Request, ss *session) (engine.RuleInfo, []engine.RuleVersion, bool) {
	name := r.PathValue("name")
	ctx := ss.ctx(r)
	ri, err := s.e.GetRule(ctx, name, 0)
	var vs []engine.RuleVersion
	if err == nil {
		vs, err = s.e.RuleVersions(ctx, name)
	}
	switch {
	case errors.Is(err, engine.ErrRuleNotFound):
		s.fail(w, r, ss, http.StatusNotFound, "No installed rule called "+name+" (it may have been removed, or be outside your scope).", nil)
		return ri, nil, false
	case err != nil:
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the rule's versions failed.", err)
		return ri, nil, false
	}
	return ri, vs, true
}

// versionDiff shows the line diff of two versions' pretty-printed
// programs; by default the one before the installed one against it.
func (s *server) versionDiff(w http.ResponseWriter, r *http.Request, ss *session) {
	ri, vs, ok := s.ruleVersions(w, r, ss)
	if !ok {
		return
	}
	from, to := r.URL.Query().Get("from"), r.URL.Query().Get("to")
	if to == "" {
		to = ri.ProgramRef
	}
	if from == "" {
		from = to
		for i, v := range vs { // newest first: the one after it is older
			if v.Ref == to && i+1 < len(vs) {
				from = vs[i+1].Ref
			}
		}
	}
	d := diffData{Rule: ri, Versions: vs, CanDeploy: ss.principal.Deploy}
	var okFrom, okTo bool
	d.From, okFrom = versionOf(vs, from)
	d.To, okTo = versionOf(vs, to)
	if !okFrom || !okTo {
		s.fail(w, r, ss, http.StatusNotFound, "Rule "+ri.Name+" has no version "+map[bool]string{true: to, false: from}[okFrom]+" that you may see.", nil)
		return
	}
	d.Diff = lineDiff(prettyJSON(d.From.Program), prettyJSON(d.To.Program))
	d.Same = d.From.Ref == d.To.Ref
	s.render(w, r, ss, "diff", page{Title: ri.Name + ": compare versions", Nav: "rules", Data: d})
}

// versionRestore deploys an old version again: its program_ref with the
// rule's current params. A deploy the gate holds goes to its approval.
func (s *server) versionRestore(w http.ResponseWriter, r *http.Request, ss *session) {
	ri, vs, ok := s.ruleVersions(w, r, ss)
	if !ok {
		return
	}
	back := "/rules/" + url.PathEscape(ri.Name)
	v, found := versionOf(vs, r.PostFormValue("ref"))
	if !found {
		s.fail(w, r, ss, http.StatusNotFound, "Rule "+ri.Name+" has no version "+r.PostFormValue("ref")+" that you may see.", nil)
		return
	}
	input, err := restoreInput(ri.Name, ri.Params)
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Restoring the version failed.", err)
		return
	}
	resp, err := s.e.Execute(ss.ctx(r), engine.ExecuteRequest{ProgramRef: v.Ref, Input: input})
	var re *pilotage.RequestError
	switch {
	case errors.As(err, &re):
		ss.setFlash("Not restored: " + re.Message)
	case err != nil:
		s.fail(w, r, ss, http.StatusInternalServerError, "Restoring the version failed.", err)
		return
	case resp.Approval != nil && resp.Outcome.Status == "approval_pending":
		ss.setFlash("Restoring " + v.Ref + " needs approval (" + string(resp.Approval.Risk) + " risk): nothing was installed yet. Once it is approved, restore it again.")
		back = "/approvals/" + url.PathEscape(resp.Approval.ID)
	case !resp.Outcome.OK:
		msg := "Not restored (" + statusText(resp.Outcome.Status) + "): " + resp.Outcome.Error
		for _, d := range resp.Diagnostics {
			msg += "; " + d.Path + " " + d.Message
		}
		ss.setFlash(msg)
	default:
		ss.setFlash("Restored: rule " + ri.Name + " runs " + v.Ref + " again (first deployed by " + v.Principal + ").")
	}
	redirect(w, r, back)
}

// restoreInput is the rule's params with the install member that replaces
// the rule itself: a restore is an explicit replacement.
func restoreInput(rule string, params json.RawMessage) (json.RawMessage, error) {
	in := map[string]any{}
	if len(params) > 0 {
		if err := json.Unmarshal(params, &in); err != nil {
			return nil, err
		}
	}
	in["install"] = map[string]any{"rule": rule, "replace": true}
	return json.Marshal(in)
}
