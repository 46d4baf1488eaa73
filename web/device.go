package web

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/engine"
	"github.com/pilothouse/pilothouse/pilotage"
)

// deviceData is what the device page template gets.
type deviceData struct {
	*deviceView
	Href     string
	History  historyView
	Controls []control
	Recent   []controlRun
	Key      string // idempotency key of this page's control forms
	CanAct   bool   // the principal may act on the house (deploy)
	Simulate *simView
	Logbook  logbookView
	// Stale: the device is offline; its values are those before.
	Stale *staleView
}

// controlRun is a recent manual run of one of the device's actions.
type controlRun struct {
	engine.Run
	Action string
}

// deviceEntries finds a device and its entries in the caller's scope: the
// entries tagged device:<id>, or, for a name that is no device (the
// notification channels), the entries whose id is <id>.<something>.
func (s *server) deviceEntries(ctx context.Context, id string) (*pilotage.Entry, []*pilotage.Entry, error) {
	var dev *pilotage.Entry
	if res, err := s.e.Lookup(ctx, engine.LookupRequest{Verb: "get", ID: id}); err == nil {
		if g := res.(*engine.GetResponse); g.Entry.Kind == pilotage.KindDevice {
			dev = g.Entry
		}
	}
	var out []*pilotage.Entry
	req := engine.LookupRequest{Verb: "list", Tag: "device:" + id, Limit: engine.MaxListLimit}
	for {
		res, err := s.e.Lookup(ctx, req)
		if err != nil {
			return nil, nil, err
		}
		lr := res.(*engine.ListResponse)
		out = append(out, lr.Items...)
		if lr.NextCursor == "" {
			break
		}
		req.Cursor = lr.NextCursor
	}
	if dev != nil || len(out) > 0 {
		return dev, out, nil
	}
	all, err := s.visibleEntries(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, en := range all {
		if strings.HasPrefix(en.ID, id+".") && en.Kind != pilotage.KindAutomation && tagValue(en.Tags, "device:") == "" {
			out = append(out, en)
		}
	}
	return nil, out, nil
}

func (s *server) devicePage(w http.ResponseWriter, r *http.Request, ss *session) {
	id := r.PathValue("id")
	ctx := ss.ctx(r)
	dev, entries, err := s.deviceEntries(ctx, id)
	if err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the catalog failed.", err)
		return
	}
	if dev == nil && len(entries) == 0 {
		s.fail(w, r, ss, http.StatusNotFound, "No device called "+id+" (it may be gone, or outside your scope).", nil)
		return
	}
	all := entries
	if dev != nil {
		all = append([]*pilotage.Entry{dev}, entries...)
	}
	views := s.groupDevices(ctx, all)
	d := deviceData{deviceView: views[0], Href: "/devices/" + url.PathEscape(id), Key: randomToken(), CanAct: ss.principal.Deploy}
	d.Simulate = s.simulateOf(ss, views[0])
	d.History = historyView{TZ: s.tzName(), Empty: "No state history is recorded for this device."}
	var states []*pilotage.Entry
	for _, row := range d.States {
		states = append(states, row.Entry)
	}
	if _, _, err := s.chartsIn(ctx, &d.History, r.URL.Query(), d.Href, states); err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the history failed.", err)
		return
	}
	if d.Stale, err = s.staleValues(ctx, d.deviceView); err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the history failed.", err)
		return
	}
	charts := d.History.Chart.Charts
	for _, a := range d.Actions {
		d.Controls = append(d.Controls, newControl(a.Entry, s.currentOf(ctx, id)))
	}
	if d.Logbook, err = s.logPanel(ctx, engine.LogQuery{Device: id}); err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Reading the logbook failed.", err)
		return
	}
	if d.Recent, err = s.recentControls(ctx, d.Actions); err != nil {
		s.fail(w, r, ss, http.StatusInternalServerError, "Listing the recent controls failed.", err)
		return
	}
	s.render(w, r, ss, "device", page{Title: or(d.Entry.Name, id), Nav: "devices", Live: "devices", Charts: len(charts) > 0, Data: d})
}

// currentOf gives a property's current value as text: the live value of
// the state <device>.<prop>, when there is one. A helper's set takes
// value and shows it as <device>.state.
func (s *server) currentOf(ctx context.Context, dev string) func(string) string {
	return func(prop string) string {
		if l, ok := s.e.Live(ctx, dev+"."+prop); ok && l.Value != nil {
			return liveShown(l.Value)
		}
		if l, ok := s.e.Live(ctx, dev+".state"); ok && prop == "value" && l.Value != nil {
			return compactJSON(l.Value)
		}
		return ""
	}
}

// recentControls lists the caller's latest manual runs of these actions.
func (s *server) recentControls(ctx context.Context, actions []actionRow) ([]controlRun, error) {
	if len(actions) == 0 {
		return nil, nil
	}
	runs, err := s.e.ListRuns(ctx, engine.RunFilter{Kind: engine.KindManual, Limit: 100})
	if err != nil {
		return nil, err
	}
	var out []controlRun
	for _, run := range runs {
		name := refRule(run.Ref)
		for _, a := range actions {
			if name == controlName(a.Entry.ID) {
				out = append(out, controlRun{Run: run, Action: a.Entry.ID})
				break
			}
		}
		if len(out) == 5 {
			break
		}
	}
	return out, nil
}

// confirmData is the confirmation page of a risky control.
type confirmData struct {
	Action *pilotage.Entry
	Device string
	Back   string
	Post   string
	Risk   string
	Args   []argPair
	Fields []argPair // the form's fields, posted again with confirm
}

type argPair struct{ Name, Value string }

// controlAction runs an action from the device page as the session's
// principal: a one-call program executed once (a run with its trace).
// Security and external actions first get a confirmation page stating
// the risk; only its form carries confirm=<risk>.
func (s *server) controlAction(w http.ResponseWriter, r *http.Request, ss *session) {
	id := r.PathValue("id")
	ctx := ss.ctx(r)
	back := "/devices/" + url.PathEscape(id)
	if rng := r.PostFormValue("range"); rng != "" {
		back += "?range=" + url.QueryEscape(rng)
	}
	action := r.PostFormValue("action")
	en, ok := s.deviceAction(ctx, id, action)
	if !ok {
		s.fail(w, r, ss, http.StatusNotFound, "No action "+action+" on "+id+" (it may be gone, or outside your scope).", nil)
		return
	}
	args, err := controlArgs(r.PostForm, en.InputSchema)
	if err != nil {
		ss.setFlash("Not sent: " + err.Error())
		redirect(w, r, back)
		return
	}
	confirmed := pilotage.Risk(r.PostFormValue("confirm"))
	if (en.RiskHints.Destructive || en.RiskHints.OpenWorld) && confirmed != en.Risk {
		s.render(w, r, ss, "confirm", page{Title: "Confirm " + en.ID, Nav: "devices", Data: confirmPage(en, id, back, r)})
		return
	}
	resp, err := s.e.Execute(ctx, engine.ExecuteRequest{Program: oneCall(en.ID, args), Once: true, Confirmed: confirmed,
		IdempotencyKey: r.PostFormValue("key")})
	var re *pilotage.RequestError
	switch {
	case errors.As(err, &re):
		ss.setFlash("Not sent: " + re.Message)
	case err != nil:
		s.fail(w, r, ss, http.StatusInternalServerError, "The control failed.", err)
		return
	case resp.Replayed:
		// A re-post of a form already sent (a back button, a double
		// click): its key was used, so nothing is sent again.
		ss.setFlashLink(replayFlash(en.ID, args, resp, s.when), "/runs/"+url.PathEscape(resp.RunID))
	case !runStored(resp):
		// A refusal past the principal's stored-refusal bound has no
		// record to link to.
		ss.setFlash(controlFlash(en.ID, args, resp) + " The run was not stored.")
	default:
		ss.setFlashLink(controlFlash(en.ID, args, resp), "/runs/"+url.PathEscape(resp.RunID))
	}
	redirect(w, r, back)
}

// replayFlash says that a control was sent before from this same form
// and not sent again, with what that first send did.
func replayFlash(action string, args map[string]any, resp *engine.ExecuteResponse, when func(time.Time) string) string {
	at := "earlier"
	if !resp.FirstAt.IsZero() {
		at = "at " + when(resp.FirstAt)
	}
	return action + " " + compactJSON(args) + ": already sent " + at + " from this form (" + statusText(resp.Outcome.Status) +
		"), not sent again. Reload the page to send it again."
}

func controlFlash(action string, args map[string]any, resp *engine.ExecuteResponse) string {
	msg := action + " " + compactJSON(args) + ": " + statusText(resp.Outcome.Status)
	if resp.Outcome.Error != "" {
		msg += " (" + resp.Outcome.Error + ")"
	}
	for _, d := range resp.Diagnostics {
		msg += "; " + strings.TrimSpace(d.Path+" "+d.Message)
	}
	return msg + "."
}

// deviceAction finds a visible action of the device.
func (s *server) deviceAction(ctx context.Context, dev, action string) (*pilotage.Entry, bool) {
	res, err := s.e.Lookup(ctx, engine.LookupRequest{Verb: "get", ID: action})
	if err != nil {
		return nil, false
	}
	en := res.(*engine.GetResponse).Entry
	owner := tagValue(en.Tags, "device:")
	if owner == "" {
		owner, _, _ = strings.Cut(en.ID, ".")
	}
	return en, en.Kind == pilotage.KindAction && owner == dev
}

func confirmPage(en *pilotage.Entry, dev, back string, r *http.Request) confirmData {
	d := confirmData{Action: en, Device: dev, Back: back, Post: "/devices/" + url.PathEscape(dev) + "/control"}
	sent := map[string]string{}
	for _, k := range sortedKeys(r.PostForm) {
		v := r.PostForm.Get(k)
		switch {
		case k == "csrf" || k == "confirm":
		case strings.HasPrefix(k, "arg."):
			if strings.TrimSpace(v) != "" {
				d.Args = append(d.Args, argPair{strings.TrimPrefix(k, "arg."), v})
				sent[strings.TrimPrefix(k, "arg.")] = v
			}
			d.Fields = append(d.Fields, argPair{k, v})
		default:
			d.Fields = append(d.Fields, argPair{k, v})
		}
	}
	d.Risk = riskSentence(en, sent)
	return d
}

func sortedKeys(v url.Values) []string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// runStored says whether resp's run record was stored (its trace says
// stored: false otherwise).
func runStored(resp *engine.ExecuteResponse) bool {
	if resp.Trace == nil || resp.Trace.Stats == nil {
		return true
	}
	stored, ok := resp.Trace.Stats["stored"].(bool)
	return !ok || stored
}
