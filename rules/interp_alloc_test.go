package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/model"

	"context"
	"reflect"
	"testing"
	"time"
)

// firingWorld is the cheapest World a firing can run against: a fixed
// clock, calls that succeed with the live World's output.
type firingWorld struct{ now time.Time }

func (w *firingWorld) Now() time.Time                             { return w.now }
func (w *firingWorld) State(string) (any, bool)                   { return nil, false }
func (w *firingWorld) Automation(string) (*Compiled, bool)        { return nil, false }
func (w *firingWorld) Sleep(context.Context, time.Duration) error { return nil }
func (w *firingWorld) Wait(context.Context, *WaitRequest) (bool, error) {
	return true, nil
}
func (w *firingWorld) Call(context.Context, string, map[string]any) (any, error) {
	return map[string]any{"published": true}, nil
}

// benchFiring is the body `pilothouse bench` installs: a state trigger and
// one call whose argument is the trigger's value.
func benchFiring() (*Compiled, RunInput) {
	c := itProgram([]*model.Trigger{{ID: "t", Kind: TriggerState, Entity: "bench_sensor_1.count1"}}, nil,
		itCall("cmd", "bench_light_1.set", "brightness", itTpl("trigger.value")))
	in := RunInput{Trigger: TriggerFire{ID: "t", Value: 41.0, From: 40.0, Time: itStart,
		Because: "bench_sensor_1.count1 changed from 40 to 41"}, Cache: itCache}
	return c, in
}

func BenchmarkRunFiring(b *testing.B) {
	c, in := benchFiring()
	w := &firingWorld{now: itStart}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res := Run(ctx, c, w, in)
		if !res.Outcome.OK {
			b.Fatal(res.Outcome)
		}
	}
}

// TestRunFiringAllocs pins the allocations of one simple firing (the bench
// body): the run's own allocation (result, interpreter, environment, the
// first trace entries and call record), the trigger map and three of its
// values, the args map, the World's output and expr's map fetch.
func TestRunFiringAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled objects at random")
	}
	c, in := benchFiring()
	w := &firingWorld{now: itStart}
	ctx := context.Background()
	n := testing.AllocsPerRun(200, func() {
		if res := Run(ctx, c, w, in); !res.Outcome.OK {
			t.Fatal(res.Outcome)
		}
	})
	if n > 11 {
		t.Errorf("one firing allocates %.0f objects, want at most 11", n)
	}
}

// Step outputs are bound lazily (only once an expression can read steps);
// what expressions and values see must not change.
func TestRunStepOutputsSeenByLaterExpressions(t *testing.T) {
	w := &firingWorld{now: itStart}
	c := itProgram([]*model.Trigger{itState("t", "x.y", 1.0)}, []*model.Condition{itCond("ok", "trigger.value == 1")},
		itCall("a", "light.set", "brightness", 1),
		itCount("r", 2, itCall("in", "light.set", "brightness", itTpl("vars.index"))),
		itSet("s", "a", itTpl("steps.a.output.published"), "in", itTpl("steps['in'].output"),
			"r", itTpl("steps.r.output.iterations"), "ok", itTpl("steps.ok.output")),
		itCall("b", "light.set", "all", itTpl("steps")),
		itCall("c", "light.set", "brightness", 3),
	)
	res := itRun(t, c, w, itFire("t", 1.0))
	if !res.Outcome.OK {
		t.Fatalf("outcome %+v", res.Outcome)
	}
	want := map[string]any{"a": true, "in": map[string]any{"published": true}, "r": 2, "ok": true}
	for k, v := range want {
		if !reflect.DeepEqual(res.Vars[k], v) {
			t.Errorf("vars.%s = %#v, want %#v", k, res.Vars[k], v)
		}
	}
	// The steps map a value holds is the live one: later outputs show.
	held := res.Calls[3].Args["all"].(map[string]any)
	for _, id := range []string{"ok", "a", "in", "r", "s", "b", "c"} {
		if _, ok := held[id]; !ok {
			t.Errorf("steps held by call b lacks %q: %v", id, held)
		}
	}
	// The trace input was copied when the call was made.
	in := itStep(t, res, "b").Input.(map[string]any)["all"].(map[string]any)
	if _, ok := in["b"]; ok || len(in) != 5 {
		t.Errorf("trace input of b = %v, want the 5 outputs before it", in)
	}
}

// An expression that yields $env keeps its environment map: a later run
// must not reuse it.
func TestRunEnvValueNotReused(t *testing.T) {
	w := &firingWorld{now: itStart}
	c := itProgram([]*model.Trigger{itState("t", "x.y", nil)}, nil,
		itCall("a", "light.set", "env", itTpl("$env")))
	first := itRun(t, c, w, RunInput{Trigger: TriggerFire{ID: "t", Value: 1.0}})
	for i := range 50 {
		itRun(t, c, w, RunInput{Trigger: TriggerFire{ID: "t", Value: float64(i + 2)}})
	}
	env := first.Calls[0].Args["env"].(map[string]any)
	if v := env["trigger"].(map[string]any)["value"]; v != 1.0 {
		t.Errorf("the first run's $env now says trigger.value = %v", v)
	}
}

// trigger, params, vars and steps are made when an expression reads them;
// what the expression sees must not change.
func TestRunEnvironmentBoundOnDemand(t *testing.T) {
	w := &firingWorld{now: itStart}
	at := itStart.Add(-time.Second)
	want := map[string]any{"id": "t", "kind": "state", "entity": "x.y", "value": 2.0, "from": 1.0, "to": 2.0, "time": at}
	c := itProgram([]*model.Trigger{itState("t", "x.y", 2.0)}, nil,
		itCall("a", "light.set", "b", 1),
		itCount("r", 2, itCall("in", "light.set", "b", 2)),
		itSet("s", "tr", itTpl("trigger"), "p", itTpl("params")),
		itCall("e", "light.set", "env", itTpl("$env")))
	res := itRun(t, c, w, RunInput{Trigger: TriggerFire{ID: "t", Value: 2.0, From: 1.0, Time: at}})
	if !res.Outcome.OK {
		t.Fatalf("outcome %+v", res.Outcome)
	}
	if !reflect.DeepEqual(res.Vars["tr"], want) {
		t.Errorf("trigger = %v, want %v", res.Vars["tr"], want)
	}
	if p := res.Vars["p"]; !reflect.DeepEqual(p, map[string]any{}) {
		t.Errorf("params = %#v, want {}", p)
	}
	if _, ok := res.Vars["index"]; ok {
		t.Errorf("vars.index outlived its loop: %v", res.Vars)
	}
	env := res.Calls[len(res.Calls)-1].Args["env"].(map[string]any)
	if !reflect.DeepEqual(env["trigger"], want) || len(env["steps"].(map[string]any)) != 5 ||
		len(env["vars"].(map[string]any)) != 2 || env["params"] == nil {
		t.Errorf("$env = %v", env)
	}
	// Without triggers: id "", the fire's value and time.
	c = itProgram(nil, nil, itSet("s", "tr", itTpl("trigger")))
	res = itRun(t, c, w, RunInput{Trigger: TriggerFire{Value: "v"}})
	if want := map[string]any{"id": "", "value": "v", "from": nil, "time": itStart}; !reflect.DeepEqual(res.Vars["tr"], want) {
		t.Errorf("trigger without triggers = %v, want %v", res.Vars["tr"], want)
	}
}
