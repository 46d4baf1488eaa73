package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"

	"github.com/pilothouse/pilothouse/storage"
)

// TestSinceSurvivesRestart: since() counts from a state's last change as
// the state history recorded it, across a restart of the whole process
// (a fresh catalog whose first values are the broker's retained ones).
func TestSinceSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	// The first process records no history: the rows written below are
	// the whole story before the restart.
	h := newHouse(t, Config{History: HistoryConfig{Off: true}})
	for name, patch := range map[string]map[string]any{"front_door": {"contact": false}, "hall_motion": {"occupancy": false}} {
		if err := h.sim.Trigger(ctx, name, patch); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(h.t, 5*time.Second, "the door open and the hall quiet", func() bool {
		d, _ := h.devs.Live("front_door.contact")
		m, _ := h.devs.Live("hall_motion.occupancy")
		return d.Value == false && m.Value == false
	})
	// Before this process: the door has been open for two hours; the
	// hall was busy an hour ago, so its quiet began just now.
	now := time.Now()
	pts := []storage.HistoryPoint{
		{Entity: "front_door.contact", T: now.Add(-3 * time.Hour), JSON: "true"},
		{Entity: "front_door.contact", T: now.Add(-2 * time.Hour), JSON: "false"},
		{Entity: "hall_motion.occupancy", T: now.Add(-3 * time.Hour), JSON: "false"},
		{Entity: "hall_motion.occupancy", T: now.Add(-time.Hour), JSON: "true"},
	}
	if _, err := h.store.WriteHistory(ctx, pts, storage.HistoryWrite{}); err != nil {
		t.Fatal(err)
	}
	h.cfg.History.Off = false
	h.restartProcess(1, nil, true)
	testutil.Eventually(h.t, 5*time.Second, "the retained states", func() bool {
		d, _ := h.devs.Live("front_door.contact")
		m, _ := h.devs.Live("hall_motion.occupancy")
		return d.Value == false && m.Value == false
	})
	// lookup get's live value, asked first, agrees with since().
	if l, ok := h.eng.Live(ctx, "front_door.contact"); !ok || l.LastChanged.Sub(now.Add(-2*time.Hour)).Abs() > time.Second {
		t.Errorf("lookup's last_changed %v, want %v (what since() counts from)", l.LastChanged, now.Add(-2*time.Hour))
	}
	resp := h.execute(ExecuteRequest{TestRun: true, Program: json.RawMessage(`{"name": "since",
	  "triggers": [{"id": "t", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "read", "set": {"door": "{{ since('front_door.contact') }}", "hall": "{{ since('hall_motion.occupancy') }}",
	    "door_at": "{{ last_changed('front_door.contact') }}", "remote": "{{ since('bedroom_remote.action') }}"}}]}`)})
	out, _ := json.Marshal(resp.Output)
	var o struct{ Vars map[string]any }
	_ = json.Unmarshal(out, &o)
	door, _ := o.Vars["door"].(float64)
	hall, _ := o.Vars["hall"].(float64)
	if door < 7190 || door > 7300 || hall > 120 || o.Vars["remote"] != 0.0 {
		t.Fatalf("since: door %v s (want about 7200), hall %v s (want a few), remote %v (want 0: the press that fired); %s", door, hall, o.Vars["remote"], out)
	}
	if at, err := time.Parse(time.RFC3339Nano, o.Vars["door_at"].(string)); err != nil || at.Sub(now.Add(-2*time.Hour)).Abs() > time.Second {
		t.Errorf("last_changed %v, want %v", o.Vars["door_at"], now.Add(-2*time.Hour))
	}
	if l, _ := h.devs.Live("front_door.contact"); l.FirstValue || l.LastChanged.Sub(now.Add(-2*time.Hour)).Abs() > time.Second {
		t.Errorf("the catalog keeps the settled change: %+v", l)
	}
}

// TestLastChangeSurvivesTheBound: a quiet entity's one change outlives
// the history's row bound, which a chatty sensor fills: after a restart,
// since() and last_changed() of the quiet one still count from it.
func TestLastChangeSurvivesTheBound(t *testing.T) {
	ctx := context.Background()
	h := newHouse(t, Config{History: HistoryConfig{Off: true}})
	if err := h.sim.Trigger(ctx, "front_door", map[string]any{"contact": false}); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(h.t, 5*time.Second, "the door open", func() bool {
		d, _ := h.devs.Live("front_door.contact")
		return d.Value == false
	})
	// The previous process's history: the door opened two hours ago, then
	// the illuminance reported 300 times into a bound of 100 rows.
	now := time.Now()
	const bound = 100
	pts := []storage.HistoryPoint{{Entity: "front_door.contact", T: now.Add(-2 * time.Hour), JSON: "false"}}
	if _, err := h.store.WriteHistory(ctx, pts, storage.HistoryWrite{MaxRows: bound}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		pts = pts[:0]
		for j := range bound {
			at := now.Add(-time.Hour + time.Duration(i*bound+j)*time.Second)
			pts = append(pts, storage.HistoryPoint{Entity: "hall_motion.illuminance", T: at, IsNum: true, Num: float64(j)})
		}
		if _, err := h.store.WriteHistory(ctx, pts, storage.HistoryWrite{MaxRows: bound}); err != nil {
			t.Fatal(err)
		}
	}
	if rows, err := h.store.HistoryChanges(ctx, "front_door.contact", time.Time{}, now, 10); err != nil || len(rows) != 0 {
		t.Fatalf("the bound kept the door's raw rows (%d, %v): the test proves nothing", len(rows), err)
	}
	h.cfg.History = HistoryConfig{MaxRows: bound}
	h.restartProcess(1, nil, true)
	testutil.Eventually(h.t, 5*time.Second, "the retained door", func() bool {
		d, _ := h.devs.Live("front_door.contact")
		return d.Value == false
	})
	resp := h.execute(ExecuteRequest{TestRun: true, Program: json.RawMessage(`{"name": "since",
	  "triggers": [{"id": "t", "event": "bedroom_remote.action"}],
	  "steps": [{"id": "read", "set": {"door": "{{ since('front_door.contact') }}", "door_at": "{{ last_changed('front_door.contact') }}"}}]}`)})
	out, _ := json.Marshal(resp.Output)
	var o struct{ Vars map[string]any }
	_ = json.Unmarshal(out, &o)
	if door, _ := o.Vars["door"].(float64); door < 7190 || door > 7300 {
		t.Errorf("since: door %v s, want about 7200; %s", door, out)
	}
	if at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(o.Vars["door_at"])); err != nil || at.Sub(now.Add(-2*time.Hour)).Abs() > time.Second {
		t.Errorf("last_changed %v, want %v", o.Vars["door_at"], now.Add(-2*time.Hour))
	}
}
