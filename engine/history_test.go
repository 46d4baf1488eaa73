package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
	"github.com/pilothouse/pilothouse/pilotage"
)

// set sets a demo device's state and waits until the catalog has it.
func (h *house) set(dev, prop string, v any) {
	h.t.Helper()
	if err := h.sim.Trigger(context.Background(), dev, map[string]any{prop: v}); err != nil {
		h.t.Fatal(err)
	}
	testutil.Eventually(h.t, 5*time.Second, dev+"."+prop, func() bool {
		l, ok := h.devs.Live(dev + "." + prop)
		return ok && l.Value == v
	})
}

func TestHistoryRecordsStateChanges(t *testing.T) {
	guest := &Principal{Name: "guest", Scope: Scope{DenyTypes: []string{"lock"}}}
	h := newHouse(t, Config{Principals: []*Principal{Owner, guest}})
	t0 := time.Now()
	for _, on := range []bool{true, false, true, false} {
		h.set("hall_motion", "occupancy", on)
	}
	for _, c := range []float64{18, 20, 22} {
		h.set("living_thermostat", "occupied_heating_setpoint", c)
	}
	h.set("front_lock", "state", "UNLOCK")
	h.eng.FlushHistory()
	ctx := context.Background()

	occ, err := h.eng.History(ctx, HistoryRequest{ID: "hall_motion.occupancy", From: t0})
	if err != nil {
		t.Fatal(err)
	}
	if occ.Numeric || occ.Count < 4 || occ.Counts["true"] < 2 || occ.Counts["false"] < 2 || len(occ.Changes) != occ.Count {
		t.Fatalf("occupancy history: %+v", occ)
	}
	if last := occ.Changes[len(occ.Changes)-1]; last.Value != false {
		t.Fatalf("last change: %+v", last)
	}
	pw, err := h.eng.History(ctx, HistoryRequest{ID: "living_thermostat.occupied_heating_setpoint", From: t0})
	if err != nil {
		t.Fatal(err)
	}
	if !pw.Numeric || pw.Unit != "°C" || pw.Count < 3 || len(pw.Buckets) == 0 {
		t.Fatalf("setpoint history: %+v", pw)
	}
	hi := 0.0
	for _, b := range pw.Buckets {
		hi = max(hi, b.Max)
	}
	if hi != 22 {
		t.Fatalf("setpoint max %v, want 22", hi)
	}

	// Scope: the guest does not see the lock, so neither its history.
	gctx := WithPrincipal(ctx, guest)
	var re *pilotage.RequestError
	if _, err := h.eng.History(gctx, HistoryRequest{ID: "front_lock.state"}); !errors.As(err, &re) || re.Kind != pilotage.ErrNotFound {
		t.Fatalf("guest reads the lock's history: %v", err)
	}
	if _, err := h.eng.History(ctx, HistoryRequest{ID: "front_lock.state", From: t0}); err != nil {
		t.Fatalf("owner reads the lock's history: %v", err)
	}
	if _, err := h.eng.History(ctx, HistoryRequest{ID: "hall_light.set"}); !errors.As(err, &re) || re.Kind != pilotage.ErrNotFound {
		t.Fatalf("history of an action: %v", err)
	}
	if st := h.eng.HistoryStatus(); !st.On || st.Written < 8 || st.Dropped != 0 || st.Retention != "P10D" {
		t.Fatalf("status: %+v", st)
	}
}

func TestRuleReads(t *testing.T) {
	guest := &Principal{Name: "guest", Scope: Scope{DenyDevices: []string{"front_door"}}}
	h := newHouse(t, Config{Principals: []*Principal{Owner, guest}})
	h.deploy(`{"name": "dark-motion",
  "triggers": [{"id": "motion", "state": "hall_motion.occupancy", "to": true}, {"id": "dusk", "at": "21:00"}, {"id": "btn", "event": "bedroom_remote.action"}],
  "conditions": [{"id": "dark", "expr": "state('hall_motion.illuminance') < 50 && state('hall_motion.occupancy') == true"}],
  "steps": [{"id": "on", "call": "hall_light.set", "args": {"state": "ON"}}]}`)
	got, err := h.eng.RuleReads(context.Background(), "dark-motion")
	if err != nil || len(got) != 2 || got[0] != "hall_motion.occupancy" || got[1] != "hall_motion.illuminance" {
		t.Fatalf("reads: %v %v", got, err)
	}
	if _, err := h.eng.RuleReads(context.Background(), "nope"); !errors.Is(err, ErrRuleNotFound) {
		t.Fatalf("unknown rule: %v", err)
	}
}
