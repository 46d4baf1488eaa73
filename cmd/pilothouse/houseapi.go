package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/devices/demo"
	"github.com/pilothouse/pilothouse/engine"
)

// The house API is the command line's JSON door beside /mcp, for what the
// Pilotage tools do not cover: driving the demo's simulated devices
// (pilothouse sim press/set) and listing runs (pilothouse runs). It takes
// the bearer tokens /mcp takes, under the same wrong-token allowance, and
// refuses browsers (any Origin header): the web UI is theirs.
const apiPrefix = "/api/"

// maxRunsListed bounds one pilothouse runs answer.
const maxRunsListed = 500

type houseAPI struct {
	a          *app
	principals []*engine.Principal
}

func (a *app) routeAPI(mux *http.ServeMux, principals []*engine.Principal) {
	mux.Handle(apiPrefix, &houseAPI{a: a, principals: principals})
}

func (h *houseAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := h.authenticate(w, r)
	if p == nil {
		return
	}
	ctx := engine.WithPrincipal(r.Context(), p)
	switch route := r.Method + " " + strings.TrimPrefix(r.URL.Path, apiPrefix); route {
	case "POST sim":
		h.sim(ctx, w, r, p)
	case "GET runs":
		h.runs(ctx, w, r)
	case "GET house":
		writeAPI(w, http.StatusOK, h.house())
	default:
		apiError(w, http.StatusNotFound, fmt.Sprintf("no %s %s here: the house API has POST %ssim, GET %sruns and GET %shouse",
			r.Method, r.URL.Path, apiPrefix, apiPrefix, apiPrefix))
	}
}

// authenticate answers the request and returns nil unless it may go on:
// an allowed Host, no browser Origin, a body within the bound and, when
// principals are configured, a right bearer token.
func (h *houseAPI) authenticate(w http.ResponseWriter, r *http.Request) *engine.Principal {
	if !h.a.guard.CheckHost(w, r) {
		return nil
	}
	if r.Header.Get("Origin") != "" {
		apiError(w, http.StatusForbidden, "the house API is for the pilothouse command line, not browsers: use the web UI")
		return nil
	}
	if !h.a.guard.BoundBody(w, r) {
		return nil
	}
	if len(h.principals) == 0 {
		return h.a.cfg.stdioPrincipal() // loopback only, as /mcp
	}
	p, wait := h.a.guard.Admit(r, h.principals)
	switch {
	case wait > 0:
		w.Header().Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
		apiError(w, http.StatusTooManyRequests, "too many wrong bearer tokens from this address: try again later")
	case p == nil:
		w.Header().Set("WWW-Authenticate", `Bearer realm="pilothouse", error="invalid_token"`)
		apiError(w, http.StatusUnauthorized, "a valid bearer token is required (--token or PILOTHOUSE_TOKEN)")
	}
	return p
}

// simRequest is one change to a demo device: Set its properties, or Press
// a button (an action of a remote).
type simRequest struct {
	Device string         `json:"device"`
	Set    map[string]any `json:"set,omitempty"`
	Press  string         `json:"press,omitempty"`
}

// sim drives the demo simulator for the command line (pilothouse sim).
func (h *houseAPI) sim(ctx context.Context, w http.ResponseWriter, r *http.Request, p *engine.Principal) {
	var req simRequest
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		apiError(w, http.StatusBadRequest, `want {"device": "...", "set": {...}} or {"device": "...", "press": "..."}: `+err.Error())
		return
	}
	before := h.a.simState(req.Device)
	at := time.Now() // runs the change fires start from here (pilothouse sim shows them)
	state, err := h.a.simulate(ctx, p, req)
	switch {
	case errors.Is(err, errSimForbidden):
		apiError(w, http.StatusForbidden, err.Error())
	case errors.Is(err, errNoDemo):
		apiError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, demo.ErrInvalid):
		apiError(w, http.StatusBadRequest, strings.TrimPrefix(err.Error(), "demo: "))
	case err != nil:
		apiError(w, http.StatusServiceUnavailable, err.Error())
	default:
		writeAPI(w, http.StatusOK, map[string]any{"device": req.Device, "state": state, "at": at.In(h.zone()),
			"unchanged": unchangedBy(before, req.Set)})
	}
}

// apiRun is one run as pilothouse runs lists it, its times in the house's
// zone.
type apiRun struct {
	ID        string    `json:"id"`
	Rule      string    `json:"rule,omitempty"`
	Kind      string    `json:"kind"`
	Status    string    `json:"status"`
	OK        bool      `json:"ok"`
	Principal string    `json:"principal"`
	Started   time.Time `json:"started"`
	Ended     time.Time `json:"ended,omitzero"`
}

// runs lists the caller's runs, newest first: rule, status and kind
// filter, since (RFC 3339) bounds how far back, limit how many.
func (h *houseAPI) runs(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 20
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxRunsListed {
			apiError(w, http.StatusBadRequest, fmt.Sprintf("limit %q: want a whole number from 1 to %d", s, maxRunsListed))
			return
		}
		limit = n
	}
	var since time.Time
	if s := q.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			apiError(w, http.StatusBadRequest, fmt.Sprintf("since %q: want RFC 3339, e.g. 2026-01-15T07:00:00+01:00", s))
			return
		}
		since = t
	}
	f := engine.RunFilter{Rule: q.Get("rule"), Status: q.Get("status"), Kind: q.Get("kind"), Limit: limit}
	list, err := h.a.eng.ListRuns(ctx, f)
	if err != nil {
		apiError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	zone := h.zone()
	out := []apiRun{}
	for _, run := range list {
		if !since.IsZero() && run.Started.Before(since) {
			break // newest first: the rest are older still
		}
		ar := apiRun{ID: run.ID, Rule: run.Rule, Kind: run.Kind, Status: run.Status, OK: run.OK, Principal: run.Principal,
			Started: run.Started.In(zone)}
		if !run.Ended.IsZero() {
			ar.Ended = run.Ended.In(zone)
		}
		out = append(out, ar)
	}
	writeAPI(w, http.StatusOK, map[string]any{"time_zone": h.house().TimeZone, "runs": out})
}

func (h *houseAPI) zone() *time.Location {
	if z := h.a.eng.Config().TimeZone; z != nil {
		return z
	}
	return time.Local
}

// houseInfo is what the command line needs to show the house's times.
type houseInfo struct {
	TimeZone  string `json:"time_zone"`
	UTCOffset int    `json:"utc_offset_seconds"` // now
	Demo      bool   `json:"demo"`
}

func (h *houseAPI) house() houseInfo {
	zone := h.zone()
	name, off := time.Now().In(zone).Zone()
	if zone.String() != "Local" {
		name = zone.String()
	}
	return houseInfo{TimeZone: name, UTCOffset: off, Demo: h.a.sim != nil}
}

func writeAPI(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func apiError(w http.ResponseWriter, code int, msg string) {
	writeAPI(w, code, map[string]string{"error": msg})
}
