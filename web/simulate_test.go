package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/pilothouse/pilothouse/engine"
)

// fakeSim stands for the demo simulator (cmd wires the real one; its
// browser test drives it): hall_motion is simulated, it records calls.
type fakeSim struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeSim) Simulates(id string) bool { return id == "hall_motion" }

func (f *fakeSim) Simulate(ctx context.Context, id string, set map[string]any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := engine.PrincipalFrom(ctx)
	f.calls = append(f.calls, fmt.Sprintf("%s %s %v", p.Name, id, set))
	if _, ok := set["colour"]; ok {
		return errors.New("hall_motion has no property \"colour\"; its properties: illuminance, occupancy")
	}
	return nil
}

func (f *fakeSim) called() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func simServer(t *testing.T, f *fixture, principals []*engine.Principal, sim Simulator) *client {
	srv := httptest.NewServer(Handler(f.e, Options{Principals: principals, Sim: sim, Logger: slog.New(slog.NewTextHandler(tWriter{t}, nil))}))
	t.Cleanup(srv.Close)
	c := f.client()
	c.base = srv.URL
	return c
}

func TestSimulateControl(t *testing.T) {
	f := newFixture(t, nil)
	sim := &fakeSim{}
	c := simServer(t, f, nil, sim)
	_, body, _ := c.get("/devices/hall_motion")
	mustContain(t, "demo device", body, `id="simulate"`, `action="/devices/hall_motion/simulate"`, `<option>illuminance</option>`, `<option>occupancy</option>`)
	_, body, _ = c.get("/devices/hall_light")
	mustNotContain(t, "not simulated", body, `id="simulate"`)
	tok := c.csrf("/devices/hall_motion")
	if code, _, _ := c.post("/devices/hall_motion/simulate", url.Values{"prop": {"occupancy"}, "value": {"true"}}); code != http.StatusForbidden {
		t.Fatalf("without csrf: %d", code)
	}
	for _, tc := range []struct {
		name        string
		dev, prop   string
		value, want string
		code        int
	}{
		{"json value", "hall_motion", "occupancy", "true", `Simulated hall_motion occupancy=true: the device reported it; rules fire as they would (see the logbook below).`, http.StatusSeeOther},
		{"simulator refuses", "hall_motion", "colour", "red", `Not simulated: hall_motion has no property &#34;colour&#34;`, http.StatusSeeOther},
		{"empty value", "hall_motion", "occupancy", " ", `Not simulated: give a property and a value.`, http.StatusSeeOther},
		{"too long", "hall_motion", "occupancy", string(make([]byte, maxSimValue+1)), `Not simulated: the property or the value is too long.`, http.StatusSeeOther},
		{"not a demo device", "hall_light", "state", "ON", "", http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, h := c.post("/devices/"+tc.dev+"/simulate", url.Values{"csrf": {tok}, "prop": {tc.prop}, "value": {tc.value}})
			if code != tc.code {
				t.Fatalf("%d, want %d", code, tc.code)
			}
			if tc.want != "" {
				_, body, _ := c.get(h.Get("Location"))
				mustContain(t, tc.name, body, tc.want)
			}
		})
	}
	if got := sim.called(); len(got) != 2 || got[0] != "owner hall_motion map[occupancy:true]" {
		t.Fatalf("simulator calls: %q", got)
	}
}

// TestSimulateOnlyForTheOwner: a login that is no administrator with
// deploy neither sees nor may post the control.
func TestSimulateOnlyForTheOwner(t *testing.T) {
	f := newFixture(t, testPrincipals())
	sim := &fakeSim{}
	c := simServer(t, f, testPrincipals(), sim)
	c.login(ownerTok) // may deploy, no administrator
	_, body, _ := c.get("/devices/hall_motion")
	mustNotContain(t, "non-admin", body, `id="simulate"`)
	tok := c.csrf("/devices/hall_motion")
	if code, _, _ := c.post("/devices/hall_motion/simulate", url.Values{"csrf": {tok}, "prop": {"occupancy"}, "value": {"true"}}); code != http.StatusNotFound {
		t.Fatalf("non-admin simulate: %d", code)
	}
	if got := sim.called(); len(got) != 0 {
		t.Fatalf("simulator called: %q", got)
	}
}
