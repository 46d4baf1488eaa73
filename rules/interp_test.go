package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/model"
	"github.com/pilothouse/pilothouse/rules/internal/sim"

	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
)

var itMotion = []*model.Trigger{itState("motion", "hall_motion.occupancy", true), itState("door", "front_door.contact", false)}

func itBase() map[string]any {
	return map[string]any{
		"hall_motion.occupancy": true, "hall_lux.illuminance": 12.0,
		"hall_light.state": "OFF", "hall_light.brightness": 0.0, "front_door.contact": true,
	}
}

func TestRunTraces(t *testing.T) {
	tests := []struct {
		name   string
		c      *Compiled
		in     RunInput
		sc     Scenario
		ids    []string
		status string
		errMsg string
	}{
		{
			name: "call after a true condition",
			c: itProgram(itMotion, []*model.Condition{itCond("dark", "state('hall_lux.illuminance') < 30")},
				itCall("on", "hall_light.set", "state", "ON", "brightness", 180)),
			in:     itFire("motion", true),
			ids:    []string{"triggers", "motion", "dark", "on"},
			status: StatusSuccess,
		},
		{
			name: "false condition ends the run",
			c: itProgram(itMotion, []*model.Condition{itCond("dark", "state('hall_lux.illuminance') < 5")},
				itCall("on", "hall_light.set", "state", "ON")),
			in:     itFire("motion", true),
			ids:    []string{"triggers", "motion", "dark"},
			status: StatusConditionsNotMet,
		},
		{
			name:   "count loop",
			c:      itProgram(itMotion, nil, itCount("blink", 2, itCall("toggle", "porch_light.set", "state", "TOGGLE"), itDelay("pause", "500ms"))),
			in:     itFire("motion", true),
			ids:    []string{"triggers", "motion", "blink", "toggle#1", "pause#1", "toggle#2", "pause#2"},
			status: StatusSuccess,
		},
		{
			name: "nested loops restart the inner counter",
			c: itProgram(itMotion, nil, itCount("outer", 2,
				itCount("inner", 2, itSet("x", "v", itTpl("vars.index"))))),
			in:     itFire("motion", true),
			ids:    []string{"triggers", "motion", "outer", "inner#1", "x#1#1", "x#1#2", "inner#2", "x#2#1", "x#2#2"},
			status: StatusSuccess,
		},
		{
			name:   "zero-iteration loop",
			c:      itProgram(itMotion, nil, itCount("none", 0, itCall("c", "a.set")), itForEach("each", itConst([]any{}), itCall("d", "a.set"))),
			in:     itFire("motion", true),
			ids:    []string{"triggers", "motion", "none", "each"},
			status: StatusSuccess,
		},
		{
			name: "if and choose",
			c: itProgram(itMotion, nil,
				itIf("late", "trigger.id == 'door'", []*model.Step{itCall("dim", "hall_light.set")}, []*model.Step{itCall("off", "hall_light.set")}),
				itChoose("pick", []*model.Step{itCall("dflt", "a.set")}, itArm("low", "1 > 2", itCall("l", "a.set")), itArm("high", "2 > 1", itCall("h", "a.set"))),
				itChoose("none", nil, itArm("never", "false", itCall("n", "a.set")))),
			in:     itFire("motion", true),
			ids:    []string{"triggers", "motion", "late", "off", "pick", "h", "none"},
			status: StatusSuccess,
		},
		{
			name:   "wait met from the timeline",
			c:      itProgram(itMotion, nil, itWait("quiet", "hall_motion.occupancy", false, 30*time.Minute, false), itCall("off", "hall_light.set")),
			in:     itFire("motion", true),
			sc:     Scenario{State: map[string]any{"hall_motion.occupancy": true}, Timeline: []sim.TimelineEntry{{At: 10 * time.Minute, State: map[string]any{"hall_motion.occupancy": false}}}},
			ids:    []string{"triggers", "motion", "quiet", "off"},
			status: StatusSuccess,
		},
		{
			name:   "wait without a timeline times out",
			c:      itProgram(itMotion, nil, itWait("quiet", "hall_motion.occupancy", false, 30*time.Minute, false), itCall("off", "hall_light.set")),
			in:     itFire("motion", true),
			sc:     Scenario{State: map[string]any{"hall_motion.occupancy": true}},
			ids:    []string{"triggers", "motion", "quiet"},
			status: StatusTimeout,
			errMsg: `step "quiet": wait timed out after 30m0s`,
		},
		{
			name:   "wait timeout fails the run",
			c:      itProgram(itMotion, nil, itWait("quiet", "hall_motion.occupancy", false, 30*time.Minute, false), itCall("off", "hall_light.set")),
			in:     itFire("motion", true),
			sc:     Scenario{Waits: map[string]string{"quiet": sim.WaitTimeout}},
			ids:    []string{"triggers", "motion", "quiet"},
			status: StatusTimeout,
			errMsg: `step "quiet": wait timed out after 30m0s`,
		},
		{
			name:   "forced wait timeout with continue_on_timeout is assumed",
			c:      itProgram(itMotion, nil, itWait("quiet", "hall_motion.occupancy", false, 30*time.Minute, true), itCall("off", "hall_light.set")),
			in:     itFire("motion", true),
			sc:     Scenario{Waits: map[string]string{"quiet": sim.WaitTimeout}},
			ids:    []string{"triggers", "motion", "quiet", "off"},
			status: core.StatusAssumed,
			errMsg: "the body ran to its end, but these results were assumed by scenario.waits, not simulated: quiet",
		},
		{
			name:   "wait timeout with continue_on_timeout",
			c:      itProgram(itMotion, nil, itWait("quiet", "hall_motion.occupancy", false, 30*time.Minute, true), itCall("off", "hall_light.set")),
			in:     itFire("motion", true),
			sc:     Scenario{State: map[string]any{"hall_motion.occupancy": true}},
			ids:    []string{"triggers", "motion", "quiet", "off"},
			status: StatusSuccess,
		},
		{
			name:   "stop",
			c:      itProgram(itMotion, nil, itCall("a", "a.set"), itIf("b", "true", []*model.Step{itStop("s", "enough", false)}, nil), itCall("c", "c.set")),
			in:     itFire("motion", true),
			ids:    []string{"triggers", "motion", "a", "b", "s"},
			status: core.StatusStopped,
		},
		{
			name:   "stop with error",
			c:      itProgram(itMotion, nil, itStop("s", "door left open", true), itCall("c", "c.set")),
			in:     itFire("motion", true),
			ids:    []string{"triggers", "motion", "s"},
			status: StatusFailed,
			errMsg: "door left open",
		},
		{
			name:   "expression error names the step",
			c:      itProgram(itMotion, nil, itSet("v", "x", itTpl("1 / vars.missing.deep"))),
			in:     itFire("motion", true),
			ids:    []string{"triggers", "motion", "v"},
			status: StatusFailed,
			errMsg: `step "v": expression "1 / vars.missing.deep"`,
		},
		{
			name:   "unknown trigger",
			c:      itProgram(itMotion, nil, itCall("a", "a.set")),
			in:     itFire("nope", 1),
			ids:    []string{},
			status: StatusFailed,
			errMsg: `unknown trigger "nope"`,
		},
		{
			name:   "skipped conditions",
			c:      itProgram(itMotion, []*model.Condition{itCond("never", "false")}, itCall("a", "a.set")),
			in:     RunInput{Trigger: TriggerFire{ID: "door"}, SkipConditions: true},
			ids:    []string{"triggers", "door", "never", "a"},
			status: StatusSuccess,
		},
		{
			name:   "while loop ends at its max",
			c:      itProgram(itMotion, nil, itWhile("w", "true", 2, itSet("s", "n", itTpl("vars.index")))),
			in:     itFire("motion", true),
			ids:    []string{"triggers", "motion", "w", "s#1", "s#2"},
			status: StatusSuccess,
		},
		{
			name:   "until loop runs once before checking",
			c:      itProgram(itMotion, nil, itUntil("u", "vars.index >= 3", 10, itCall("c", "a.set"))),
			in:     itFire("motion", true),
			ids:    []string{"triggers", "motion", "u", "c#1", "c#2", "c#3"},
			status: StatusSuccess,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := itSim(itBase(), tt.sc)
			res := itRun(t, tt.c, w, tt.in)
			if got := itIDs(res.Steps); !reflect.DeepEqual(got, tt.ids) {
				t.Errorf("ids = %q, want %q", got, tt.ids)
			}
			if res.Outcome.Status != tt.status {
				t.Errorf("status = %q (%s), want %q", res.Outcome.Status, res.Outcome.Error, tt.status)
			}
			if !strings.HasPrefix(res.Outcome.Error, tt.errMsg) || (tt.errMsg == "" && res.Outcome.Error != "") {
				t.Errorf("error = %q, want prefix %q", res.Outcome.Error, tt.errMsg)
			}
		})
	}
}

func TestRunDecisions(t *testing.T) {
	c := itProgram(itMotion, nil,
		itCount("blink", 2, itCall("toggle", "porch_light.set")),
		itCount("none", 0, itCall("x", "a.set")),
		itIf("late", "hour(now()) >= 23", []*model.Step{itCall("dim", "a.set")}, nil),
		itChoose("none2", nil, itArm("a1", "false")),
	)
	res := itRun(t, c, itSim(itBase(), Scenario{}), RunInput{Trigger: TriggerFire{ID: "motion", Value: true}})
	want := map[string][]pilotage.Decision{
		"triggers": {{At: "triggers", Took: "motion", Because: "hall_motion.occupancy changed to true"}},
		"blink":    {{At: "blink", Took: "continue", Because: "iteration 1 of 2"}, {At: "blink", Took: "continue", Because: "iteration 2 of 2"}, {At: "blink", Took: "exit", Because: "count 2 done"}},
		"none":     {{At: "none", Took: "exit", Because: "count is 0"}},
		"late":     {{At: "late", Took: "else", Because: "hour(now()) >= 23 = false"}},
		"none2":    {{At: "none2", Took: "default", Because: "no arm matched (1 checked)"}},
	}
	for id, d := range want {
		if got := itStep(t, res, id).Decisions; !reflect.DeepEqual(got, d) {
			t.Errorf("%s decisions = %+v, want %+v", id, got, d)
		}
	}
	if got := itStep(t, res, "motion").Output; got != true {
		t.Errorf("trigger output = %v", got)
	}
}

func TestRunValuesFlow(t *testing.T) {
	c := itProgram(itMotion, nil,
		itForEach("each", itConst([]any{"a", "b"}), itSet("acc", "last", itTpl("vars.item"), "i", itTpl("vars.index"))),
		itCall("on", "hall_light.set", "brightness", itTpl("vars.i * 10"), "msg", &model.Template{Parts: []model.TemplatePart{{Text: "last="}, {Expr: itExpr("vars.last")}}}),
		itIf("lit", "state('hall_light.brightness') == 20", []*model.Step{itSet("ok", "seen", true)}, nil),
	)
	w := itSim(itBase(), Scenario{})
	res := itRun(t, c, w, itFire("motion", true))
	if res.Outcome.Status != StatusSuccess {
		t.Fatalf("outcome %+v", res.Outcome)
	}
	if got := itStep(t, res, "on").Input; !reflect.DeepEqual(got, map[string]any{"brightness": 20, "msg": "last=b"}) {
		t.Errorf("call input = %#v", got)
	}
	if got := itStep(t, res, "lit").Decisions[0].Took; got != model.LabelThen {
		t.Errorf("simulated effect not visible: took %q", got)
	}
	if _, leaked := res.Vars["item"]; leaked {
		t.Error("vars.item outlived its loop")
	}
	if res.Vars["seen"] != true || res.Vars["last"] != "b" {
		t.Errorf("vars = %v", res.Vars)
	}
	if calls := w.Calls(); len(calls) != 1 || calls[0].ID != "hall_light.set" {
		t.Errorf("sim calls = %+v", calls)
	}
	if len(res.Calls) != 1 || res.Calls[0].Step != "on" {
		t.Errorf("run calls = %+v", res.Calls)
	}
}

func TestRunVirtualTime(t *testing.T) {
	c := itProgram(itMotion, nil, itDelay("d", "2m"), itCount("r", 2, itDelay("p", "500ms")), itCall("c", "a.set"))
	res := itRun(t, c, itSim(itBase(), Scenario{}), itFire("motion", true))
	if got := *itStep(t, res, "c").TMs; got != 121000 {
		t.Errorf("t_ms = %v, want 121000", got)
	}
	if res.Ended.Sub(res.Started) != 121*time.Second {
		t.Errorf("duration = %v", res.Ended.Sub(res.Started))
	}
}

func TestRunBounds(t *testing.T) {
	recur := itCompile(&model.Program{Name: "rec", Steps: []*model.Step{itCall("again", "script.rec")}})
	itEntry(recur, &pilotage.Entry{ID: "script.rec", Kind: pilotage.KindAutomation})
	tests := []struct {
		name   string
		c      *Compiled
		lim    Limits
		status string
		errMsg string
		last   string // id and status of the last entry
	}{
		{"steps", itProgram(itMotion, nil, itWhile("w", "true", 100, itSet("s", "x", 1))), Limits{MaxSteps: 10},
			StatusLimitExceeded, `step limit of 10 trace entries reached before step "s#8"`, "s#7 success"},
		{"iterations", itProgram(itMotion, nil, itWhile("w", "true", 0, itSet("s", "x", 1))), Limits{MaxIterations: 3},
			StatusLimitExceeded, `step "w": loop exceeded 3 iterations`, "s#3 success"},
		{"count above limit", itProgram(itMotion, nil, itCount("r", 5, itSet("s", "x", 1))), Limits{MaxIterations: 3},
			StatusLimitExceeded, `step "r": repeat count 5 exceeds the limit of 3 iterations`, "r limit_exceeded"},
		{"wall time", itProgram(itMotion, nil, itDelay("d", "2h"), itCall("c", "a.set")), Limits{MaxWall: time.Hour},
			StatusTimeout, `run exceeded its wall-time bound of 1h0m0s at step "d"`, "d timeout"},
		{"wall time in wait", itProgram(itMotion, nil, itWait("q", "x.y", 1, 0, false)), Limits{MaxWall: time.Hour},
			StatusTimeout, `run exceeded its wall-time bound of 1h0m0s at step "q"`, "q timeout"},
		{"call depth", recur, Limits{MaxCallDepth: 2},
			StatusLimitExceeded, `step "again/again/again": call depth limit of 2 exceeded`, "again/again/again limit_exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := Scenario{}
			if tt.name == "wall time in wait" {
				sc.Waits = map[string]string{"q": sim.WaitTimeout}
			}
			w := itSim(itBase(), sc)
			w.SetAutomation("script.rec", recur)
			in := itFire("motion", true)
			if tt.c == recur {
				in = RunInput{}
			}
			in.Limits = tt.lim
			res := itRun(t, tt.c, w, in)
			if res.Outcome.Status != tt.status || res.Outcome.Error != tt.errMsg {
				t.Errorf("outcome = %+v, want %s %q", res.Outcome, tt.status, tt.errMsg)
			}
			l := res.Steps[len(res.Steps)-1]
			if got := l.ID + " " + l.Outcome.Status; got != tt.last {
				t.Errorf("last entry = %q, want %q (%v)", got, tt.last, itIDs(res.Steps))
			}
			if tt.name == "steps" && len(res.Steps) != 10 {
				t.Errorf("%d entries, want 10", len(res.Steps))
			}
		})
	}
}

func TestRunExpandedAutomation(t *testing.T) {
	sub := itCompile(&model.Program{Name: "flash",
		Params: []byte(`{"type":"object","properties":{"times":{"type":"integer","default":2},"who":{"type":"string"}}}`),
		Steps: []*model.Step{
			itCount("loop", itTpl("params.times"), itCall("inner", "porch_light.set", "who", itTpl("params.who"))),
			itStop("done", "flashed", false),
		}})
	c := itProgram(itMotion, nil,
		itCount("rep", 2, itCall("script", "script.flash", "who", itTpl("trigger.id"))),
		itCall("after", "a.set"))
	itEntry(c, &pilotage.Entry{ID: "script.flash", Kind: pilotage.KindAutomation})
	w := itSim(itBase(), Scenario{})
	w.SetAutomation("script.flash", sub)
	res := itRun(t, c, w, itFire("motion", true))
	want := []string{"triggers", "motion", "rep",
		"script#1", "script#1/loop", "script#1/inner#1", "script#1/inner#2", "script#1/done",
		"script#2", "script#2/loop", "script#2/inner#1", "script#2/inner#2", "script#2/done", "after"}
	if got := itIDs(res.Steps); !reflect.DeepEqual(got, want) {
		t.Fatalf("ids = %q\nwant %q", got, want)
	}
	if res.Outcome.Status != StatusSuccess {
		t.Errorf("outcome %+v", res.Outcome)
	}
	call := itStep(t, res, "script#2")
	if !reflect.DeepEqual(call.Calls, []string{"script.flash"}) || call.Outcome.Status != StepSuccess {
		t.Errorf("call entry = %+v", call)
	}
	if got := call.Output; !reflect.DeepEqual(got, map[string]any{"status": "stopped", "stop": "flashed"}) {
		t.Errorf("call output = %#v", got)
	}
	if got := itStep(t, res, "script#1/inner#2").Input; !reflect.DeepEqual(got, map[string]any{"who": "motion"}) {
		t.Errorf("sub args = %#v", got)
	}
	// A failure inside the sub-program fails the caller with the same status.
	w.SetAutomation("script.flash", itCompile(&model.Program{Name: "flash", Params: sub.Params(), Steps: []*model.Step{itStop("bad", "sub failed", true)}}))
	res = itRun(t, c, w, itFire("motion", true))
	if res.Outcome.Status != StatusFailed || itStep(t, res, "script#1").Outcome.Status != StepFailed {
		t.Errorf("outcome %+v / %+v", res.Outcome, itStep(t, res, "script#1").Outcome)
	}
}

// errWorld is a SimWorld whose calls fail or panic.
type errWorld struct {
	*SimWorld
	err   error
	panic bool
}

func (w *errWorld) Call(ctx context.Context, id string, args map[string]any) (any, error) {
	if w.panic {
		panic("boom")
	}
	return nil, w.err
}

func TestRunCallErrors(t *testing.T) {
	c := itProgram(itMotion, nil, itCall("a", "a.set"), itCall("b", "b.set"))
	tests := []struct {
		name    string
		w       *errWorld
		status  string
		stepSt  string
		errText string
	}{
		{"not connected", &errWorld{err: fmt.Errorf("publish: %w", ErrNotConnected)}, StatusNotConnected, StepNotConnected, `step "a": a.set not sent: not connected to the MQTT broker`},
		{"refused", &errWorld{err: errors.New("value out of range")}, StatusFailed, StepFailed, `step "a": a.set failed: value out of range`},
		{"panic", &errWorld{panic: true}, StatusFailed, StepFailed, `internal error at step "a": boom`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.w.SimWorld = itSim(itBase(), Scenario{})
			res := Run(context.Background(), c, tt.w, itFire("motion", true))
			itCheckResult(t, c.Plan, res)
			if res.Outcome.Status != tt.status || res.Outcome.Error != tt.errText {
				t.Errorf("outcome = %+v", res.Outcome)
			}
			if got := itStep(t, res, "a").Outcome.Status; got != tt.stepSt {
				t.Errorf("step status = %q", got)
			}
		})
	}
}

// cancelWorld cancels the run's context when the body sleeps, as a rule
// restart or shutdown would.
type cancelWorld struct {
	*SimWorld
	cancel context.CancelFunc
}

func (w *cancelWorld) Sleep(ctx context.Context, d time.Duration) error {
	w.cancel()
	return ctx.Err()
}

func TestRunCancelled(t *testing.T) {
	c := itProgram(itMotion, nil, itCall("a", "a.set"), itDelay("d", "1m"), itCall("b", "b.set"))
	t.Run("before the first step", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		res := Run(ctx, c, itSim(itBase(), Scenario{}), itFire("motion", true))
		itCheckResult(t, c.Plan, res)
		if res.Outcome != (pilotage.Outcome{Status: StatusCancelled, Error: `cancelled before step "triggers"`}) || len(res.Steps) != 0 {
			t.Errorf("outcome = %+v, %d steps", res.Outcome, len(res.Steps))
		}
	})
	t.Run("during a delay", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		res := Run(ctx, c, &cancelWorld{itSim(itBase(), Scenario{}), cancel}, itFire("motion", true))
		itCheckResult(t, c.Plan, res)
		if res.Outcome.Status != StatusCancelled || res.Outcome.Error != `cancelled during step "d"` {
			t.Errorf("outcome = %+v", res.Outcome)
		}
		if got := itStep(t, res, "d").Outcome.Status; got != core.StepCancelled || len(res.Steps) != 4 {
			t.Errorf("delay step %q, ids %v", got, itIDs(res.Steps))
		}
	})
	t.Run("engine deadline", func(t *testing.T) {
		ctx, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
		defer cancel()
		res := Run(ctx, c, itSim(itBase(), Scenario{}), itFire("motion", true))
		itCheckResult(t, c.Plan, res)
		if res.Outcome.Status != StatusTimeout {
			t.Errorf("outcome = %+v", res.Outcome)
		}
	})
}

func TestRunMemoryBudget(t *testing.T) {
	c := itProgram(itMotion, nil, itSet("big", "x", itTpl("map(1..100000, {# * 2})")))
	in := itFire("motion", true)
	in.Limits.MemoryBudget = 1000
	res := itRun(t, c, itSim(itBase(), Scenario{}), in)
	if res.Outcome.Status != StatusLimitExceeded {
		t.Errorf("outcome = %+v", res.Outcome)
	}
}

// TestRunConcurrent runs one Compiled from several goroutines (installed
// rules in mode parallel share it); -race checks that Run keeps no shared
// mutable state.
func TestRunConcurrent(t *testing.T) {
	c := itProgram(itMotion, []*model.Condition{itCond("dark", "state('hall_lux.illuminance') < 30")},
		itForEach("each", itConst([]any{1, 2, 3}), itSet("v", "x", itTpl("vars.item * 2"))),
		itCall("on", "hall_light.set", "brightness", itTpl("vars.x")))
	results := make([]*RunResult, 8)
	done := make(chan struct{})
	for i := range results {
		go func() {
			defer func() { done <- struct{}{} }()
			results[i] = Run(context.Background(), c, itSim(itBase(), Scenario{}), itFire("motion", true))
		}()
	}
	for range results {
		<-done
	}
	for _, res := range results {
		itCheckResult(t, c.Plan, res)
		if res.Outcome.Status != StatusSuccess || res.Vars["x"] != 6 {
			t.Errorf("outcome %+v vars %v", res.Outcome, res.Vars)
		}
	}
}

// lateCheckWorld calls the wait's Check from another goroutine after Wait
// returned, as a live World's subscription callback may; -race checks that
// this does not race with the run changing vars.
type lateCheckWorld struct {
	*SimWorld
	done chan bool
}

func (w *lateCheckWorld) Wait(ctx context.Context, req *WaitRequest) (bool, error) {
	go func() {
		for range 100 {
			if req.Check() {
				w.done <- true
				return
			}
		}
		w.done <- false
	}()
	return true, nil
}

func TestRunWaitCheckAfterWait(t *testing.T) {
	c := itProgram(itMotion, nil,
		itSet("a", "n", 0),
		&model.Step{ID: "w", Kind: model.StepWait, Wait: &model.WaitSpec{Expr: itExpr("vars.n < 1000")}},
		itCount("r", 50, itSet("b", "n", itTpl("vars.index"))))
	w := &lateCheckWorld{SimWorld: itSim(itBase(), Scenario{}), done: make(chan bool, 1)}
	res := itRun(t, c, w, itFire("motion", true))
	<-w.done // Check may have held before release; it must not race either way
	if res.Outcome.Status != StatusSuccess {
		t.Errorf("outcome %+v", res.Outcome)
	}
}

// askingWorld counts the World's Automation lookups.
type askingWorld struct {
	*SimWorld
	asked []string
}

func (w *askingWorld) Automation(id string) (*Compiled, bool) {
	w.asked = append(w.asked, id)
	return w.SimWorld.Automation(id)
}

// TestCallsToActionsDoNotAskForAutomations: the interpreter asks the World
// for a promoted body only when the validated entry is an automation (on a
// server the answer for an action used to cost a storage read per firing).
func TestCallsToActionsDoNotAskForAutomations(t *testing.T) {
	c := itProgram(nil, nil, itCall("on", "lamp.set", "state", "ON"), itCall("sub", "automation.helper@abc"))
	itEntry(c, &pilotage.Entry{ID: "lamp.set", Kind: pilotage.KindAction})
	itEntry(c, &pilotage.Entry{ID: "automation.helper@abc", Kind: pilotage.KindAutomation})
	helper := itProgram(nil, nil, itCall("inner", "lamp.set", "state", "OFF"))
	itEntry(helper, c.Entry("lamp.set"))
	w := &askingWorld{SimWorld: itSim(nil, Scenario{})}
	w.SetAutomation("automation.helper@abc", helper)
	res := Run(context.Background(), c, w, RunInput{Limits: DefaultLimits})
	if !res.Outcome.OK {
		t.Fatalf("run: %+v", res.Outcome)
	}
	if len(w.asked) != 1 || w.asked[0] != "automation.helper@abc" {
		t.Fatalf("World.Automation asked for %v, want only the automation", w.asked)
	}
}
