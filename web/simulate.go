package web

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// Simulator drives the demo house's simulated devices, for the device
// pages' simulate control (the command line's pilothouse sim drives the
// same through the house API).
type Simulator interface {
	// Simulates reports whether the device id is a simulated one.
	Simulates(id string) bool
	// Simulate makes the device report these property values now, as the
	// principal of ctx (an event's value, such as a remote's action, is a
	// press).
	Simulate(ctx context.Context, id string, set map[string]any) error
}

// Bounds of one simulate form: a property name and a value as typed.
const (
	maxSimProp  = 64
	maxSimValue = 256
)

// simView is a demo device's simulate control: the properties it has.
type simView struct {
	Props []string
}

// canSimulate: only the owner (admin with deploy) may make the house's
// sensors say what did not happen, as the house API's sim allows.
func (s *server) canSimulate(ss *session, id string) bool {
	p := ss.principal
	return s.o.Sim != nil && p.Admin && p.Deploy && s.o.Sim.Simulates(id)
}

// simulateOf is the simulate control of a device page, nil when there is
// none.
func (s *server) simulateOf(ss *session, d *deviceView) *simView {
	if !s.canSimulate(ss, d.Entry.ID) {
		return nil
	}
	v := &simView{}
	for _, rows := range [][]liveRow{d.Events, d.States} {
		for _, r := range rows {
			v.Props = append(v.Props, r.Short)
		}
	}
	if len(v.Props) == 0 {
		return nil
	}
	return v
}

// simulateAction drives a demo device from its page: the form's property
// and value (JSON when it parses, else text), checked by the simulator.
func (s *server) simulateAction(w http.ResponseWriter, r *http.Request, ss *session) {
	id := r.PathValue("id")
	back := "/devices/" + url.PathEscape(id)
	ctx := ss.ctx(r)
	if !s.canSimulate(ss, id) {
		s.fail(w, r, ss, http.StatusNotFound, "No simulated device "+id+" you may drive: only the demo's devices, and only by the owner.", nil)
		return
	}
	if dev, entries, err := s.deviceEntries(ctx, id); err != nil || dev == nil && len(entries) == 0 {
		s.fail(w, r, ss, http.StatusNotFound, "No device called "+id+" (it may be gone, or outside your scope).", err)
		return
	}
	prop, value := strings.TrimSpace(r.PostFormValue("prop")), strings.TrimSpace(r.PostFormValue("value"))
	switch {
	case prop == "" || value == "":
		ss.setFlash("Not simulated: give a property and a value.")
	case len(prop) > maxSimProp || len(value) > maxSimValue:
		ss.setFlash("Not simulated: the property or the value is too long.")
	default:
		if err := s.o.Sim.Simulate(ctx, id, map[string]any{prop: jsonOrText(value)}); err != nil {
			ss.setFlash("Not simulated: " + err.Error())
			break
		}
		ss.setFlash("Simulated " + id + " " + prop + "=" + value + ": the device reported it; rules fire as they would (see the logbook below).")
	}
	redirect(w, r, back)
}

// jsonOrText reads a typed value as JSON when it is JSON (true, 21.5,
// "on"), else as the text itself (single).
func jsonOrText(v string) any {
	var out any
	if json.Unmarshal([]byte(v), &out) == nil {
		return out
	}
	return v
}
