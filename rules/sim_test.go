package rules

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/model"
	"github.com/pilothouse/pilothouse/rules/internal/sim"
)

func simInput(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseScenario(t *testing.T) {
	in := simInput(t, `{"params":{"hold":"5m"},"scenario":{"trigger":"door","value":false,"from":true,
		"state":{"hall_lux.illuminance":3},"now":"2026-01-15T23:30:00+01:00","waits":{"quiet":"timeout","loop#2":"met"}}}`)
	params, sc, diags := ParseScenario(in)
	if len(diags) != 0 {
		t.Fatalf("diags: %+v", diags)
	}
	now := time.Date(2026, 1, 15, 23, 30, 0, 0, time.FixedZone("", 3600))
	want := Scenario{Trigger: "door", Value: false, From: true, State: map[string]any{"hall_lux.illuminance": 3.0},
		Now: &now, Waits: map[string]string{"quiet": "timeout", "loop#2": "met"}}
	if !reflect.DeepEqual(params, map[string]any{"hold": "5m"}) || !sc.Now.Equal(now) {
		t.Errorf("params %v now %v", params, sc.Now)
	}
	sc.Now, want.Now = nil, nil
	if !reflect.DeepEqual(sc, want) {
		t.Errorf("scenario = %+v\nwant %+v", sc, want)
	}
	if p, sc, d := ParseScenario(nil); len(p) != 0 || !reflect.DeepEqual(sc, Scenario{}) || d != nil {
		t.Errorf("empty input: %v %+v %v", p, sc, d)
	}
}

func TestParseScenarioErrors(t *testing.T) {
	tests := []struct {
		input string
		paths []string
	}{
		{`{"params":[1]}`, []string{"/params"}},
		{`{"scenario":"door"}`, []string{"/scenario"}},
		{`{"hold":"5m"}`, []string{"/hold"}},
		{`{"a/b":1}`, []string{"/a~1b"}},
		{`{"scenario":{"now":"tomorrow"}}`, []string{"/scenario/now"}},
		{`{"scenario":{"now":17}}`, []string{"/scenario/now"}},
		{`{"scenario":{"trigger":3,"state":[1]}}`, []string{"/scenario/state", "/scenario/trigger"}},
		{`{"scenario":{"waits":{"quiet":"soon","ok":"met"}}}`, []string{"/scenario/waits/quiet"}},
		{`{"scenario":{"waits":"met"}}`, []string{"/scenario/waits"}},
		{`{"scenario":{"when":"now"}}`, []string{"/scenario/when"}},
	}
	for _, tt := range tests {
		t.Run(tt.input, func(t *testing.T) {
			_, _, diags := ParseScenario(simInput(t, tt.input))
			var paths []string
			for _, d := range diags {
				if d.Code != "input_binding" || d.Severity != pilotage.SeverityError || d.Message == "" {
					t.Errorf("bad diagnostic %+v", d)
				}
				paths = append(paths, d.Path)
			}
			if !reflect.DeepEqual(paths, tt.paths) {
				t.Errorf("paths = %q, want %q", paths, tt.paths)
			}
		})
	}
}

func TestSimWorldCallsAndEffects(t *testing.T) {
	w := itSim(itBase(), Scenario{State: map[string]any{"hall_lux.illuminance": 99.0}})
	if v, _ := w.State("hall_lux.illuminance"); v != 99.0 {
		t.Errorf("override not seen: %v", v)
	}
	out, err := w.Call(context.Background(), "hall_light.set", map[string]any{"state": "ON", "brightness": 20, "transition": 2})
	if err != nil || !reflect.DeepEqual(out, map[string]any{"simulated": true}) {
		t.Fatalf("call = %v, %v", out, err)
	}
	if v, _ := w.State("hall_light.state"); v != "ON" {
		t.Errorf("fallback effect: state = %v", v)
	}
	if _, ok := w.State("hall_light.transition"); ok {
		t.Error("fallback created a state that does not exist")
	}
	w2 := NewSimWorld(nil, itStart, Scenario{}, func(id string, args map[string]any) map[string]any {
		return map[string]any{"front_lock.state": "LOCKED"}
	})
	_, _ = w2.Call(context.Background(), "front_lock.lock", nil)
	if v, _ := w2.State("front_lock.state"); v != "LOCKED" || len(w2.Calls()) != 1 {
		t.Errorf("effects: %v, calls %v", v, w2.Calls())
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := w.Call(ctx, "a.set", nil); err == nil {
		t.Error("call under a cancelled context succeeded")
	}
	if err := w.Sleep(ctx, time.Second); err == nil {
		t.Error("sleep under a cancelled context succeeded")
	}
}

func TestSimWorldWaits(t *testing.T) {
	closed := func(w *SimWorld) func() bool {
		return func() bool { v, _ := w.State("door.contact"); return v == true }
	}
	at := func(d time.Duration, closed bool) sim.TimelineEntry {
		return sim.TimelineEntry{At: d, State: map[string]any{"door.contact": closed}}
	}
	press := func(d time.Duration, v string) sim.TimelineEntry {
		return sim.TimelineEntry{At: d, Event: map[string]any{"remote.action": v}}
	}
	tests := []struct {
		name     string
		sc       Scenario
		req      WaitRequest
		met      bool
		elapsed  time.Duration
		assumed  bool
		noCheck  bool
		eventVal Value
	}{
		{"holds now: met after for", Scenario{State: map[string]any{"door.contact": true}}, WaitRequest{StepID: "q", For: 2 * time.Minute, Timeout: time.Hour}, true, 2 * time.Minute, false, false, Value{}},
		{"holds now: met at once", Scenario{State: map[string]any{"door.contact": true}}, WaitRequest{StepID: "q", Timeout: time.Hour}, true, 0, false, false, Value{}},
		{"never holds: times out", Scenario{}, WaitRequest{StepID: "q", Timeout: time.Hour}, false, time.Hour, false, false, Value{}},
		{"for longer than timeout", Scenario{State: map[string]any{"door.contact": true}}, WaitRequest{StepID: "q", For: 2 * time.Hour, Timeout: time.Hour}, false, time.Hour, false, false, Value{}},
		{"met when the timeline closes it", Scenario{Timeline: []sim.TimelineEntry{at(10*time.Minute, true)}}, WaitRequest{StepID: "q", Timeout: time.Hour}, true, 10 * time.Minute, false, false, Value{}},
		{"a reopening restarts the hold", Scenario{Timeline: []sim.TimelineEntry{at(time.Minute, true), at(2*time.Minute, false), at(5*time.Minute, true)}},
			WaitRequest{StepID: "q", For: 3 * time.Minute, Timeout: time.Hour}, true, 8 * time.Minute, false, false, Value{}},
		{"the timeline comes too late", Scenario{Timeline: []sim.TimelineEntry{at(2*time.Hour, true)}}, WaitRequest{StepID: "q", Timeout: time.Hour}, false, time.Hour, false, false, Value{}},
		{"scenario timeout by base id", Scenario{Waits: map[string]string{"q": "timeout"}}, WaitRequest{StepID: "call#1/q#3", Timeout: time.Hour}, false, time.Hour, true, false, Value{}},
		{"qualified id wins", Scenario{Waits: map[string]string{"q": "timeout", "q#2": "met"}}, WaitRequest{StepID: "q#2", Timeout: time.Hour}, true, 0, true, false, Value{}},
		{"event wait without an event times out", Scenario{}, WaitRequest{StepID: "q", Event: "remote.action", Timeout: time.Minute}, false, time.Minute, false, true, Value{}},
		{"event from the timeline", Scenario{Timeline: []sim.TimelineEntry{press(20*time.Second, "toggle"), press(40*time.Second, "off_double")}},
			WaitRequest{StepID: "q", Event: "remote.action", Timeout: time.Minute}, true, 40 * time.Second, false, true, Value{Set: true, V: []any{"off", "off_double"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := itSim(nil, tt.sc)
			req := tt.req
			if !tt.noCheck {
				req.Check = closed(w)
			}
			req.EventValue = tt.eventVal
			met, err := w.Wait(context.Background(), &req)
			_, assumed := w.Assumed(req.StepID)
			if err != nil || met != tt.met || w.Now().Sub(itStart) != tt.elapsed || assumed != tt.assumed {
				t.Errorf("met=%v err=%v elapsed=%v assumed=%v", met, err, w.Now().Sub(itStart), assumed)
			}
		})
	}
}

func TestFireFor(t *testing.T) {
	above, below := 25.0, 30.0
	c := itProgram([]*model.Trigger{
		itState("motion", "hall_motion.occupancy", true),
		{ID: "any", Kind: TriggerState, Entity: "front_door.contact"},
		{ID: "hot", Kind: TriggerNumeric, Entity: "room.temp", Above: &above},
		{ID: "band", Kind: TriggerNumeric, Entity: "room.temp", Above: &above, Below: &below},
		{ID: "press", Kind: TriggerEvent, Entity: "remote.action", To: Value{Set: true, V: "on"}},
		{ID: "dusk", Kind: TriggerCron, Cron: "0 30 18 * * *"},
	}, nil, itCall("a", "a.set"))
	base := map[string]any{"hall_motion.occupancy": false, "front_door.contact": true, "room.temp": 20.0}
	const scenario = "test run: scenario"
	tests := []struct {
		sc         Scenario
		id         string
		value, frm any
		because    string
	}{
		{Scenario{}, "motion", true, false, scenario},
		{Scenario{Trigger: "any"}, "any", true, nil, scenario}, // no change to report: from is unknown
		{Scenario{Trigger: "any", Value: false, From: true}, "any", false, true, scenario},
		{Scenario{Trigger: "hot"}, "hot", 26.0, 20.0, scenario},
		{Scenario{Trigger: "band"}, "band", 27.5, 20.0, scenario},
		{Scenario{Trigger: "press"}, "press", "on", nil, scenario},
		// No now: the next firing, said in the decision.
		{Scenario{Trigger: "dusk"}, "dusk", "2026-01-16T18:30:00Z", nil,
			"test run: cron 0 30 18 * * * at its next firing, Fri 2026-01-16 18:30:00 +00:00 (no scenario.now)"},
	}
	for _, tt := range tests {
		w := itSim(base, tt.sc)
		fire, err := FireFor(c, tt.sc, w)
		if err != nil || fire.ID != tt.id || fire.Value != tt.value || fire.From != tt.frm || fire.Because != tt.because || fire.NotFired != "" {
			t.Errorf("%+v: fire = %+v, %v", tt.sc, fire, err)
		}
	}
	w := itSim(base, Scenario{})
	if _, err := FireFor(c, Scenario{}, w); err != nil {
		t.Fatal(err)
	}
	if v, _ := w.State("hall_motion.occupancy"); v != true {
		t.Errorf("fired state not visible in the sim world: %v", v)
	}
	_, err := FireFor(c, Scenario{Trigger: "nope"}, w)
	if se, ok := err.(*sim.ScenarioError); !ok || se.Path != "/scenario/trigger" {
		t.Errorf("unknown trigger: %v", err)
	}
}

func TestCheckScenario(t *testing.T) {
	c := itProgram(itMotion, nil, itCount("r", 1, itWait("q", "x.y", 1, time.Minute, false)))
	diags := CheckScenario(c, Scenario{Trigger: "nope", Waits: map[string]string{"q#1": "met", "r": "met"}})
	var paths []string
	for _, d := range diags {
		paths = append(paths, d.Path)
	}
	if want := []string{"/scenario/trigger", "/scenario/waits/r"}; !reflect.DeepEqual(paths, want) {
		t.Errorf("paths = %q, want %q", paths, want)
	}
}

// TestTestRunScenario is the whole test-run path: input → scenario →
// fire → run in a SimWorld.
func TestTestRunScenario(t *testing.T) {
	c := itProgram(itMotion, []*model.Condition{itCond("dark", "state('hall_lux.illuminance') < 30")},
		itCall("on", "hall_light.set", "state", "ON"),
		itWait("quiet", "hall_motion.occupancy", false, 30*time.Minute, false),
		itIf("late", "hour(now()) >= 23", []*Step{itCall("dim", "hall_light.set", "brightness", 20)}, []*Step{itCall("off", "hall_light.set", "state", "OFF")}))
	params, sc, diags := ParseScenario(simInput(t, `{"scenario":{"trigger":"motion","now":"2026-01-15T23:10:00Z","waits":{"quiet":"met"}}}`))
	if len(diags) > 0 || len(CheckScenario(c, sc)) > 0 {
		t.Fatal(diags)
	}
	w := itSim(itBase(), sc)
	fire, err := FireFor(c, sc, w)
	if err != nil {
		t.Fatal(err)
	}
	res := itRun(t, c, w, RunInput{Trigger: fire, Params: params})
	if got := itIDs(res.Steps); !reflect.DeepEqual(got, []string{"triggers", "motion", "dark", "on", "quiet", "late", "dim"}) {
		t.Errorf("ids = %q", got)
	}
	if d := itStep(t, res, "triggers").Decisions[0]; d.Because != "test run: scenario" {
		t.Errorf("because = %q", d.Because)
	}
	if !res.Started.Equal(time.Date(2026, 1, 15, 23, 10, 0, 0, time.UTC)) {
		t.Errorf("started %v", res.Started)
	}
}

// FuzzParseScenario: any JSON object as execute input gives a result and
// only input_binding diagnostics with pointer paths, never a panic.
func FuzzParseScenario(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"params":{"a":1}}`, `{"scenario":{"trigger":"t","now":"2026-01-15T23:30:00Z","waits":{"w":"met"}}}`,
		`{"scenario":{"state":{"a.b":1},"waits":{"x":"soon"}}}`, `{"x":[1,2]}`, `{"scenario":null}`,
		`{"scenario":{"timeline":[{"at":"-1h","state":{"a.b":1}},{"at":"2m","event":{"r.action":"on"}}],"last_run":"-20m"}}`,
		`{"scenario":{"timeline":[{"at":3},{"state":[]},"x"],"last_run":{}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var in map[string]any
		if json.Unmarshal(raw, &in) != nil {
			return
		}
		_, _, diags := ParseScenario(in)
		for _, d := range diags {
			if d.Code != "input_binding" || d.Path == "" || d.Path[0] != '/' {
				t.Errorf("bad diagnostic %+v", d)
			}
		}
	})
}
