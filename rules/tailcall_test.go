package rules

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
)

// asyncWorld answers every call with published; its async calls are left
// pending (the test finishes the run), or end at once with now set.
type asyncWorld struct {
	*SimWorld
	syncErr error // what a synchronous call of the last step returns
	last    string
	now     bool
	nowErr  error
	cancel  context.CancelFunc // called by the call of last, as a restart would during its wait
	asyncs  []string
}

var published = map[string]any{"published": true}

func (w *asyncWorld) Call(ctx context.Context, id string, args map[string]any) (any, error) {
	if id == w.last && w.cancel != nil {
		w.cancel()
	}
	if id == w.last && w.syncErr != nil {
		return nil, w.syncErr
	}
	return published, nil
}

func (w *asyncWorld) CallAsync(ctx context.Context, id string, args map[string]any) (any, bool, error) {
	w.asyncs = append(w.asyncs, id)
	if id == w.last && w.cancel != nil {
		w.cancel()
	}
	if w.now {
		if w.nowErr != nil {
			return nil, false, w.nowErr
		}
		return published, false, nil
	}
	return published, true, nil
}

// runView is what a run reports, without its times.
type runView struct {
	Status, Error string
	Steps         []string
	Calls         []string
}

func viewOf(res *RunResult) runView {
	v := runView{Status: res.Outcome.Status, Error: res.Outcome.Error}
	for _, s := range res.Steps {
		v.Steps = append(v.Steps, fmt.Sprintf("%s %s %q out=%v", s.ID, s.Outcome.Status, s.Outcome.Error, s.Output))
	}
	for _, c := range res.Calls {
		v.Calls = append(v.Calls, fmt.Sprintf("%s %v %q", c.ID, c.Output, c.Error))
	}
	return v
}

// TestAsyncTailEndsAsAWaitingRunWould: a run whose last step is a call
// returns before that call ends, and is final only at Finish; what the
// call ends with makes the result exactly what a run that waited for it
// makes.
func TestAsyncTailEndsAsAWaitingRunWould(t *testing.T) {
	c := itProgram(itMotion, nil, itCall("a", "a.set"), itCall("b", "b.set", "state", "ON"))
	for _, tc := range []struct {
		name    string
		err     error
		restart bool
	}{
		{"acknowledged", nil, false},
		{"not connected", fmt.Errorf("lost: %w", ErrNotConnected), false},
		{"refused", errors.New("no acknowledgement within 10s"), false},
		{"cancelled", fmt.Errorf("publish: %w", context.Canceled), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(w *asyncWorld, in RunInput) *RunResult {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if tc.restart {
					w.cancel = cancel
				}
				return Run(ctx, c, w, in)
			}
			in := itFire("motion", true)
			waited := run(&asyncWorld{SimWorld: itSim(itBase(), Scenario{}), syncErr: tc.err, last: "b.set"}, in)
			if waited.Pending() {
				t.Fatal("a run without AsyncTail is pending")
			}

			w := &asyncWorld{SimWorld: itSim(itBase(), Scenario{}), last: "b.set"}
			in.AsyncTail = true
			res := run(w, in)
			if !reflect.DeepEqual(w.asyncs, []string{"b.set"}) {
				t.Fatalf("asynchronous calls %q: only the last step's is", w.asyncs)
			}
			if !res.Pending() {
				t.Fatal("not pending before the call ended")
			}
			res.Finish(tc.err)
			if res.Pending() {
				t.Fatal("not final after the call ended")
			}
			if got, want := viewOf(res), viewOf(waited); !reflect.DeepEqual(got, want) {
				t.Errorf("ended asynchronously:\n%+v\nwaited:\n%+v", got, want)
			}
			itCheckResult(t, c.Plan, res)
		})
	}
}

// TestAsyncTailOnlyForTheLastTopLevelCall: a call inside a branch, a call
// followed by a step, and a call ended before CallAsync returns are not
// left pending.
func TestAsyncTailOnlyForTheLastTopLevelCall(t *testing.T) {
	in := itFire("motion", true)
	in.AsyncTail = true
	for _, c := range []*Compiled{
		itProgram(itMotion, nil, itIf("late", "true", []*Step{itCall("dim", "hall_light.set")}, nil)),
		itProgram(itMotion, nil, itCall("a", "a.set"), itSet("x", "v", itTpl("1"))),
	} {
		w := &asyncWorld{SimWorld: itSim(itBase(), Scenario{})}
		res := Run(context.Background(), c, w, in)
		if len(w.asyncs) != 0 || res.Pending() {
			t.Errorf("%v: asynchronous calls %q", c.Plan, w.asyncs)
		}
	}
	c := itProgram(itMotion, nil, itCall("a", "a.set"))
	w := &asyncWorld{SimWorld: itSim(itBase(), Scenario{}), now: true, nowErr: errors.New("refused")}
	res := Run(context.Background(), c, w, in)
	if res.Pending() {
		t.Fatal("a call ended during CallAsync is pending")
	}
	if res.Outcome.Status != StatusFailed || res.Outcome.Error != `step "a": a.set failed: refused` {
		t.Errorf("outcome = %+v", res.Outcome)
	}
}

// TestOnlyLastCalls: a body runs where it is fired only when its one call
// is its last top-level step, to an action, and nothing in it takes time.
func TestOnlyLastCalls(t *testing.T) {
	action := &pilotage.Entry{ID: "a.set", Kind: pilotage.KindAction}
	auto := &pilotage.Entry{ID: "automation.night", Kind: pilotage.KindAutomation}
	for _, tc := range []struct {
		name string
		c    *Compiled
		want bool
	}{
		{"one call, last", itProgram(itMotion, nil, itSet("x", "v", itTpl("1")), itCall("on", "a.set")), true},
		{"two calls", itProgram(itMotion, nil, itCall("on", "a.set"), itCall("again", "a.set")), false},
		{"a call, then a step", itProgram(itMotion, nil, itCall("on", "a.set"), itSet("x", "v", itTpl("1"))), false},
		{"the call in a branch", itProgram(itMotion, nil, itIf("late", "true", []*Step{itCall("on", "a.set")}, nil)), false},
		{"a delay before it", itProgram(itMotion, nil, itDelay("d", "1s"), itCall("on", "a.set")), false},
		{"an automation", itProgram(itMotion, nil, itCall("on", "automation.night")), false},
		{"an unknown entry", itProgram(itMotion, nil, itCall("on", "b.set")), false},
		{"no call", itProgram(itMotion, nil, itSet("x", "v", itTpl("1"))), false},
	} {
		itEntry(tc.c, action)
		itEntry(tc.c, auto)
		if got := tc.c.OnlyLastCalls(); got != tc.want {
			t.Errorf("%s: OnlyLastCalls = %v, want %v", tc.name, got, tc.want)
		}
	}
}
