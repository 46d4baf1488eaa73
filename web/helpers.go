package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/pilothouse/pilothouse/engine"
)

// helpersData is what the helpers page gets: the helpers in the caller's
// scope, and whether it may create and delete them (the owner).
type helpersData struct {
	Helpers []helperRow
	Kinds   []string
	Docs    []string
	CanEdit bool
	Form    map[string]string // a refused create's fields, to fix rather than retype
	// FieldKinds gives each kind-specific field the kinds that take it:
	// the page's script shows a field only for those.
	FieldKinds map[string]string
}

type helperRow struct {
	ID, Name, Kind, Area, Value, Source string
	Demo                                bool
}

func (s *server) helpersPage(w http.ResponseWriter, r *http.Request, ss *session) {
	s.showHelpers(w, r, ss, http.StatusOK, nil)
}

// showHelpers renders the page; after a refused create, with the refused
// fields back in the form and status 422.
func (s *server) showHelpers(w http.ResponseWriter, r *http.Request, ss *session, code int, form map[string]string) {
	ctx := ss.ctx(r)
	d := helpersData{CanEdit: s.e.MayManageHelpers(ctx), Form: form}
	d.FieldKinds = map[string]string{}
	for _, k := range engine.HelperKinds {
		d.Kinds = append(d.Kinds, string(k.Kind))
		d.Docs = append(d.Docs, string(k.Kind)+": "+k.Doc)
		for _, f := range strings.Fields(k.Fields) {
			d.FieldKinds[f] = strings.TrimSpace(d.FieldKinds[f] + " " + string(k.Kind))
		}
	}
	for _, h := range s.e.Helpers(ctx) {
		d.Helpers = append(d.Helpers, helperRow{ID: h.Def.ID, Name: h.Def.Name, Kind: string(h.Def.Kind), Area: h.Def.Area,
			Value: compactJSON(h.Value["state"]), Source: h.Source, Demo: h.Demo})
	}
	s.renderCode(w, r, ss, code, "helpers", page{Title: "Helpers", Nav: "helpers", Data: d})
}

// helperCreate makes a helper from the page's form; it works without
// JavaScript (a plain form post, CSRF-checked by authed).
func (s *server) helperCreate(w http.ResponseWriter, r *http.Request, ss *session) {
	d, bad := helperForm(r)
	for _, h := range s.e.Helpers(ss.ctx(r)) {
		if bad == "" && h.Def.ID == d.ID && !h.Demo { // the owner's replaces a demo one
			bad = "helper " + d.ID + " exists (delete it first to make it again)"
		}
	}
	var err error
	if bad == "" {
		_, err = s.e.PutHelper(ss.ctx(r), d)
	}
	switch {
	case bad != "":
		s.refuseHelper(w, r, ss, bad)
	case err != nil && engine.HelperRefused(err):
		s.refuseHelper(w, r, ss, err.Error())
	case err != nil:
		s.fail(w, r, ss, http.StatusInternalServerError, "Creating the helper failed.", err)
	case r.PostFormValue("recipe") != "":
		// Made from a recipe's list: back to that recipe, which now has it.
		ss.setFlash("Helper " + d.ID + " created.")
		redirect(w, r, "/editor?recipe="+url.QueryEscape(r.PostFormValue("recipe")))
	default:
		ss.setFlash("Helper " + d.ID + " created: rules read " + d.ID + ".state and call its actions.")
		redirect(w, r, "/devices/"+url.PathEscape(d.ID))
	}
}

// refuseHelper answers a refused create with the page, the reason and the
// fields as typed.
func (s *server) refuseHelper(w http.ResponseWriter, r *http.Request, ss *session, why string) {
	form := map[string]string{}
	for _, k := range helperFields {
		form[k] = r.PostFormValue(k)
	}
	ss.setFlash("Refused: " + why)
	s.showHelpers(w, r, ss, http.StatusUnprocessableEntity, form)
}

// helperFields are the create form's fields.
var helperFields = []string{"id", "kind", "name", "area", "unit", "mode", "duration", "min", "max", "step", "max_length", "options", "initial"}

func (s *server) helperDelete(w http.ResponseWriter, r *http.Request, ss *session) {
	id := r.PathValue("id")
	reading := s.e.RulesReading(ss.ctx(r), id)
	err := s.e.DeleteHelper(ss.ctx(r), id)
	switch {
	case err != nil && engine.HelperRefused(err):
		ss.setFlash("Refused: " + err.Error())
	case err != nil:
		s.fail(w, r, ss, http.StatusInternalServerError, "Deleting the helper failed.", err)
		return
	case len(reading) > 0:
		ss.setFlash("Helper " + id + " deleted. These rules name it and fail until a helper of that id is back: " + strings.Join(reading, ", ") + ".")
	default:
		ss.setFlash("Helper " + id + " deleted.")
	}
	redirect(w, r, "/helpers")
}

// helperForm reads a definition from the create form: empty fields are
// left out; bad says which field does not read.
func helperForm(r *http.Request) (d engine.HelperDef, bad string) {
	f := func(k string) string { return strings.TrimSpace(r.PostFormValue(k)) }
	d = engine.HelperDef{ID: f("id"), Name: f("name"), Kind: engine.HelperKind(f("kind")), Area: f("area"), Unit: f("unit"),
		Mode: f("mode"), Duration: f("duration")}
	num := func(k string) *float64 {
		v := f(k)
		if v == "" {
			return nil
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			bad = k + " is not a number: " + v
			return nil
		}
		return &x
	}
	d.Min, d.Max, d.Step = num("min"), num("max"), num("step")
	if ml := num("max_length"); ml != nil {
		d.MaxLength = int(*ml)
	}
	for _, o := range strings.Split(f("options"), ",") {
		if o = strings.TrimSpace(o); o != "" {
			d.Options = append(d.Options, o)
		}
	}
	if v := f("initial"); v != "" {
		d.Initial = initialOf(d, v)
	}
	return d, bad
}

// initialOf reads the initial value as the kind holds it.
func initialOf(d engine.HelperDef, v string) any {
	switch d.Kind {
	case "flag":
		return v == "true" || v == "on"
	case "number", "counter":
		if x, err := strconv.ParseFloat(v, 64); err == nil {
			return x
		}
	}
	return v
}
