package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/engine/mcpserver"
	"github.com/pilothouse/pilothouse/pilotage"
)

// The rule editor: a form over the program JSON, its install params and a
// test scenario, answering validate, test run and deploy through the same
// engine calls as MCP's pilotage_validate and pilotage_execute (so a
// security or external deploy waits for approval exactly as it does
// there). The page is a plain form; web/static/editor.js (built from
// web/editor) adds CodeMirror and asks op=validate as you type, with
// Accept: application/json.

func (s *server) editorRoutes(mux *http.ServeMux) {
	mux.Handle("GET /editor", s.authed(s.editorNew))
	mux.Handle("POST /editor", s.authed(s.editorPost))
	mux.Handle("GET /rules/{name}/edit", s.authed(s.editorEdit))
	mux.Handle("GET /static/editor.js", s.editorBundle())
	s.versionRoutes(mux)
}

// editorData is what the editor page gets.
type editorData struct {
	Rule                      string // the rule being edited ("" = a new one)
	Program, Params, Scenario string
	Recipes                   []recipe
	Recipe                    string // the recipe the program came from
	Needs                     []neededHelper
	CanMakeHelpers            bool
	CanDeploy                 bool
	Result                    *editorResult
	Nonce                     string // the page's style nonce, for CodeMirror
}

// neededHelper is a helper the chosen recipe uses, and whether the
// caller's house has it already.
type neededHelper struct {
	recipeHelper
	Exists bool
	Other  string // the kind of a helper of that id that is not the recipe's kind
}

// editorResult is the answer to one op, shown beside the program.
type editorResult struct {
	Op       string
	Error    string // a refused request, in words
	Valid    bool
	Diags    []pilotage.Diagnostic
	Plan     *pilotage.Plan
	Steps    []planStep
	Test     *editorTest
	Approval *pilotage.Approval
	// Exists is the installed rule of the program's name a deploy from
	// "New rule" did not replace: its page's Edit does.
	Exists string
}

// editorTest is a test run's result: its outcome and trace steps.
type editorTest struct {
	RunID   string
	Outcome pilotage.Outcome
	Steps   []pilotage.TraceStep
}

// starterProgram is the new-rule editor's text when no recipe is chosen.
const starterProgram = `{
  "name": "my-rule",
  "description": "What this rule does",
  "triggers": [],
  "steps": []
}`

func (s *server) editorNew(w http.ResponseWriter, r *http.Request, ss *session) {
	d := editorData{Program: starterProgram, Params: "{}", Scenario: "{}"}
	if slug := r.URL.Query().Get("recipe"); slug != "" {
		rc, ok := s.recipes.get(s.e, slug)
		if !ok {
			if !isSlug(slug) {
				slug = "by that name" // not a slug: not echoed (it may hold direction marks)
			} else {
				slug = "called " + slug
			}
			s.fail(w, r, ss, http.StatusNotFound, "The cookbook has no recipe "+slug+".", nil)
			return
		}
		d.Program, d.Params, d.Scenario, d.Recipe = rc.Program, rc.Params, rc.Scenario, slug
		d.Needs, d.CanMakeHelpers = s.neededHelpers(r, ss, rc), s.e.MayManageHelpers(ss.ctx(r))
	}
	s.renderEditor(w, r, ss, d, "New rule")
}

// neededHelpers says which of a recipe's helpers the caller's scope has.
func (s *server) neededHelpers(r *http.Request, ss *session, rc recipe) []neededHelper {
	kinds := map[string]string{}
	for _, h := range s.e.Helpers(ss.ctx(r)) {
		kinds[h.Def.ID] = string(h.Def.Kind)
	}
	var out []neededHelper
	for _, h := range rc.Helpers {
		k, ok := kinds[h.ID]
		n := neededHelper{recipeHelper: h, Exists: ok && k == h.Kind}
		if ok && k != h.Kind {
			n.Other = k
		}
		out = append(out, n)
	}
	return out
}

func (s *server) editorEdit(w http.ResponseWriter, r *http.Request, ss *session) {
	name := r.PathValue("name")
	ri, err := s.e.GetRule(ss.ctx(r), name, 0)
	if errors.Is(err, engine.ErrRuleNotFound) {
		s.fail(w, r, ss, http.StatusNotFound, "No installed rule called "+name+" (it may have been removed, or be outside your scope).", nil)
		return
	}
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the rule failed.", err)
		return
	}
	d := editorData{Rule: name, Program: prettyJSON(ri.Program), Params: prettyJSON(orEmptyObject(ri.Params)), Scenario: "{}"}
	if ri.Program == nil {
		d.Program = starterProgram
	}
	s.renderEditor(w, r, ss, d, "Edit "+name)
}

func (s *server) renderEditor(w http.ResponseWriter, r *http.Request, ss *session, d editorData, title string) {
	d.Recipes, d.CanDeploy = s.recipes.all(s.e), ss.principal.Deploy
	// CodeMirror injects its stylesheet as a <style> element; this page
	// alone allows that one element, by a nonce fresh for each response.
	d.Nonce = randomToken()
	w.Header().Set("Content-Security-Policy", strings.Replace(w.Header().Get("Content-Security-Policy"), "default-src 'self';", "default-src 'self'; style-src 'self' 'nonce-"+d.Nonce+"';", 1))
	s.render(w, r, ss, "editor", page{Title: title, Nav: "rules", Data: d})
}

// editorPost answers op=validate, test or deploy: JSON (the result panel
// as HTML, the diagnostics as data) when the editor's script asks, else
// the page again; a deploy that installed goes to the rule's page.
func (s *server) editorPost(w http.ResponseWriter, r *http.Request, ss *session) {
	d := editorData{Rule: r.PostFormValue("rule"), Program: r.PostFormValue("program"),
		Params: r.PostFormValue("params"), Scenario: r.PostFormValue("scenario"), Recipe: r.PostFormValue("recipe")}
	op := r.PostFormValue("op")
	res, installed, err := s.editorOp(r, ss, op, d)
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "The "+op+" failed.", err)
		return
	}
	d.Result = res
	if strings.Contains(r.Header.Get("Accept"), "application/json") {
		s.editorJSON(w, d)
		return
	}
	if installed != "" {
		ss.setFlash("Deployed: rule " + installed + " is installed and armed.")
		redirect(w, r, "/rules/"+url.PathEscape(installed))
		return
	}
	title := "New rule"
	if d.Rule != "" {
		title = "Edit " + d.Rule
	}
	s.renderEditor(w, r, ss, d, title)
}

// editorOp runs one op; installed is the rule a deploy installed. Only
// internal faults are errors: refusals are the result's Error.
func (s *server) editorOp(r *http.Request, ss *session, op string, d editorData) (res *editorResult, installed string, err error) {
	ctx := ss.ctx(r)
	res = &editorResult{Op: op}
	prog := json.RawMessage(strings.TrimSpace(d.Program))
	if len(prog) == 0 {
		res.Error = "The program is empty: write a JSON object, or start from a cookbook recipe."
		return res, "", nil
	}
	v, err := s.e.Validate(ctx, prog, nil)
	if refused(res, err) {
		return res, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	res.Valid, res.Diags, res.Plan = v.Valid, forPerson(v.Diagnostics), v.Plan
	if v.Plan != nil {
		for i, st := range v.Plan.Steps {
			res.Steps = append(res.Steps, planStep{PlanStep: st, N: i + 1})
		}
	}
	switch op {
	case "validate":
		return res, "", nil
	case "test", "deploy":
	default:
		res.Error = "Unknown operation " + op + "."
		return res, "", nil
	}
	if !v.Valid {
		res.Error = "The program has errors (marked beside it): fix them first, nothing ran."
		return res, "", nil
	}
	input, msg := editorInput(d, op == "test")
	if msg == "" {
		if e := mcpserver.InputTooLarge(s.e.Config().Limits, "input", input); e != nil {
			msg = e.Error()
		}
	}
	if msg != "" {
		res.Error = msg
		return res, "", nil
	}
	resp, err := s.e.Execute(ctx, engine.ExecuteRequest{Program: prog, Input: input, TestRun: op == "test"})
	if refused(res, err) {
		return res, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	return res, executed(res, resp, op), nil
}

// refused puts a request error (too large, not allowed) into res.
func refused(res *editorResult, err error) bool {
	var re *pilotage.RequestError
	if errors.As(err, &re) {
		res.Error = "Refused: " + re.Message
		return true
	}
	if errors.Is(err, engine.ErrNotAllowed) {
		res.Error = "Your login may not deploy rules."
		return true
	}
	return false
}

// executed fills res from an execute response; it returns the installed
// rule's name when a deploy installed one.
func executed(res *editorResult, resp *engine.ExecuteResponse, op string) string {
	if len(resp.Diagnostics) > 0 {
		res.Diags = append(res.Diags, forPerson(resp.Diagnostics)...)
	}
	if resp.Approval != nil && resp.Outcome.Status == "approval_pending" {
		res.Approval = resp.Approval
		return ""
	}
	if op == "test" {
		res.Test = &editorTest{RunID: resp.RunID, Outcome: resp.Outcome}
		if resp.Trace != nil {
			res.Test.Steps = resp.Trace.Steps
		}
		return ""
	}
	if resp.Outcome.Status == "rule_exists" && resp.Replaces != nil {
		// The assistant's way (input.install.replace) is not the person's.
		res.Error = "Not deployed: a rule named " + resp.Replaces.Rule + " is installed already (another program). To change it, use Edit on its page; to keep both, give this program another \"name\"."
		res.Exists = resp.Replaces.Rule
		return ""
	}
	if !resp.Outcome.OK {
		res.Error = "Not deployed (" + statusText(resp.Outcome.Status) + "): " + resp.Outcome.Error
		return ""
	}
	if out, ok := resp.Output.(*pilotage.DeployOutput); ok {
		return out.Rule
	}
	res.Error = "Deployed, but the server did not say under which name."
	return ""
}

// editorInput is the execute input: the params object, plus the scenario
// for a test run (the input convention); msg says what is malformed.
func editorInput(d editorData, test bool) (json.RawMessage, string) {
	in := map[string]json.RawMessage{}
	if p := strings.TrimSpace(d.Params); p != "" {
		if err := json.Unmarshal([]byte(p), &in); err != nil {
			return nil, "The params are not a JSON object: " + err.Error() + "."
		}
		if _, ok := in["scenario"]; ok {
			return nil, `The params may not have a member "scenario": it is reserved for the test scenario.`
		}
	}
	if _, ok := in["install"]; ok {
		return nil, `The params may not have a member "install": it is reserved for how a deploy installs.`
	}
	if !test && d.Rule != "" {
		// Deploying from a rule's edit page replaces that rule: the person
		// asked for it by editing it.
		in["install"] = json.RawMessage(`{"replace":true}`)
	}
	if test {
		sc := strings.TrimSpace(d.Scenario)
		if sc == "" {
			sc = "{}"
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(sc), &obj); err != nil {
			return nil, "The scenario is not a JSON object: " + err.Error() + "."
		}
		in["scenario"] = json.RawMessage(sc)
	}
	raw, _ := json.Marshal(in)
	return raw, ""
}

// editorJSON answers the editor's script: the diagnostics to place in the
// program, a one-line summary for the status line, and the result panel.
func (s *server) editorJSON(w http.ResponseWriter, d editorData) {
	var buf bytes.Buffer
	if err := s.pages["editor"].ExecuteTemplate(&buf, "edresults", d); err != nil {
		s.log.Error("rendering the editor's results", "err", err)
		http.Error(w, "rendering the results failed", http.StatusInternalServerError)
		return
	}
	diags := d.Result.Diags
	if diags == nil {
		diags = []pilotage.Diagnostic{}
	}
	out, _ := json.Marshal(map[string]any{"diagnostics": diags, "summary": resultSummary(d.Result), "panel": buf.String()})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(out)
}

// resultSummary is the status line's sentence for a result.
func resultSummary(res *editorResult) string {
	errs, warns := 0, 0
	for _, d := range res.Diags {
		if d.Severity == pilotage.SeverityError {
			errs++
		} else {
			warns++
		}
	}
	switch {
	case res.Error != "":
		return res.Error
	case res.Approval != nil:
		return "Approval pending: the deploy waits for a human's approval."
	case res.Test != nil:
		return "Test run finished: " + statusText(res.Test.Outcome.Status) + ". Nothing was sent to any device."
	case errs > 0:
		return engine.Plural(errs, "error", "") + ", " + engine.Plural(warns, "warning", "") + "."
	}
	return "Valid. " + engine.Plural(warns, "warning", "") + "."
}
