package rules

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
)

// TestRunOpsBound: MaxEvalOps bounded one evaluation only, so a loop of
// steps whose expressions each stayed under it (the attacker's 1000×1000
// repeat of a 38 ms filter) kept a core busy for minutes. The
// evaluations of one run now share MaxRunOps: past it the run ends
// limit_exceeded naming MaxRunOps and the step, wherever the operations
// were spent (set and call templates, loop conditions, for_each items);
// a household rule is unaffected. MaxRunOps is lowered here so that each
// case ends in a tenth of a second (the same bound, faster).
func TestRunOpsBound(t *testing.T) {
	init := `{"id":"a","set":{"l":"{{ 1..5000 }}"}},`
	loop := func(body string) string {
		return boundsProg(`[` + init + `{"id":"r","repeat":{"count":1000},"do":[` + body + `]}]`)
	}
	tests := []struct {
		name, src string
		// want is the outcome's status, and for limit_exceeded the step
		// named in its error (a prefix of the qualified id).
		want, step string
	}{
		{"repeat of filters", loop(`{"id":"d","set":{"v":"{{ len(filter(1..50000, # % 7 == 0)) }}"}}`), StatusLimitExceeded, `"d#`},
		{"nested repeats", boundsProg(`[` + init + `{"id":"r","repeat":{"count":1000},"do":[{"id":"q","repeat":{"count":1000},"do":[{"id":"d","set":{"v":"{{ sum(vars.l, #) }}"}}]}]}]`), StatusLimitExceeded, `"d#`},
		{"call arguments", loop(`{"id":"c","call":"notify.phone","args":{"message":"{{ string(sum(vars.l, # * 2)) }}"}}`), StatusLimitExceeded, `"c#`},
		{"if conditions", loop(`{"id":"i","if":"{{ any(vars.l, # < 0) }}","then":[{"id":"x","set":{"x":1}}]}`), StatusLimitExceeded, `"i#`},
		{"while conditions", boundsProg(`[` + init + `{"id":"w","repeat":{"while":"{{ all(vars.l, # > 0) }}","max":1000},"do":[{"id":"x","set":{"x":1}}]}]`), StatusLimitExceeded, `"w`},
		{"heavy predicates", loop(`{"id":"d","set":{"v":"{{ len(filter(vars.l, ` + strings.Repeat("# % 7 + ", 60) + `0 == 0)) }}"}}`), StatusLimitExceeded, `"d#`},
		{"household rule", boundsProg(`[{"id":"a","set":{"levels":[40,80,120,160,200],"names":["hall","porch","garage"]}},` +
			`{"id":"r","repeat":{"for_each":"{{ filter(vars.levels, # > 50) }}"},"do":[{"id":"c","call":"hall_light.set","args":{"state":"ON","brightness":"{{ vars.item + vars.index }}"}}]},` +
			`{"id":"i","if":"{{ any(vars.names, # == 'porch') and len(vars.levels) > 2 }}","then":[{"id":"p","call":"porch_light.set","args":{"state":"ON"}}]},` +
			`{"id":"n","call":"notify.phone","args":{"message":"{{ join(map(vars.names, upper(#)), ', ') + ' on' }}"}}]`), StatusSuccess, ""},
	}
	lim := DefaultLimits
	lim.MaxRunOps = 200_000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			res := runWithin(t, context.Background(), tt.src, lim, 10*slow()*time.Second)
			o := res.Outcome
			if o.Status != tt.want {
				t.Fatalf("outcome %+v, want %s", o, tt.want)
			}
			if tt.want == StatusLimitExceeded && (!strings.Contains(o.Error, "(MaxRunOps)") || !strings.Contains(o.Error, "step "+tt.step) ||
				!strings.Contains(o.Error, fmt.Sprintf("more than %d operations together", lim.MaxRunOps))) {
				t.Fatalf("error %q, want MaxRunOps named at step %s…", o.Error, tt.step)
			}
			t.Logf("%s %s in %v, %d entries", o.Status, o.Error, time.Since(start), len(res.Steps))
		})
	}
}

// TestRunOpsDefaultBound: with the default limits the attacker's body
// ends limit_exceeded naming MaxRunOps within a few seconds of CPU (it
// used to take ten thousand steps of 38 ms each), and one evaluation
// still ends at MaxEvalOps while the run has more left.
func TestRunOpsDefaultBound(t *testing.T) {
	burn := boundsProg(`[{"id":"r","repeat":{"count":1000},"do":[{"id":"q","repeat":{"count":1000},"do":[{"id":"d","set":{"v":"{{ len(filter(1..50000, # % 7 == 0)) }}"}}]}]}]`)
	lim := DefaultLimits
	if raceEnabled {
		// The race detector slows evaluation about 13 times: the same
		// bounds, a fifth of the work.
		lim.MaxRunOps /= 5
		lim.MaxEvalOps /= 5
		burn = strings.Replace(burn, "1..50000", "1..10000", 1)
	}
	cpu := cpuTime(t)
	res := runWithin(t, context.Background(), burn, lim, 30*slow()*time.Second)
	if o := res.Outcome; o.Status != StatusLimitExceeded || !strings.Contains(o.Error, "(MaxRunOps)") {
		t.Fatalf("outcome %+v", o)
	}
	if used := cpuTime(t) - cpu; used > 10*slow()*time.Second {
		t.Errorf("the run used %v of CPU", used)
	}
	t.Logf("%s after %d entries, %v of CPU", res.Outcome.Error, len(res.Steps), cpuTime(t)-cpu)
	// One evaluation: a loop whose predicate is 500 syntax nodes costs
	// more than one operation per iteration (it took seconds, charged as
	// 130,000 operations).
	for _, x := range []string{"sum(vars.l, sum(vars.l, #))", "len(filter(1..130000, " + strings.Repeat("# % 7 + ", 60) + "0 == 0))"} {
		one := boundsProg(`[{"id":"a","set":{"l":"{{ 1..1100 }}"}},{"id":"d","set":{"v":"{{ ` + x + ` }}"}}]`)
		if o := runWithin(t, context.Background(), one, lim, 10*slow()*time.Second).Outcome; !strings.Contains(o.Error, "(MaxEvalOps)") {
			t.Fatalf("one evaluation of %s: %+v, want MaxEvalOps named", x, o)
		}
	}
}

// TestRunOpsSharedWithCalledAutomation: a promoted automation called in a
// loop draws on its caller's budget (each call's body stays far under
// MaxRunOps; together they pass it).
func TestRunOpsSharedWithCalledAutomation(t *testing.T) {
	cat := newMapCatalog("calls", entry("auto.b", pilotage.KindAutomation, pilotage.RiskRead, "", ""))
	sub, err := Validate([]byte(`{"name":"b","triggers":[{"id":"t","cron":"@hourly"}],"steps":[{"id":"d","set":{"v":"{{ sum(1..5000, #) }}"}}]}`), cat, ValidateOptions{})
	if err != nil || !sub.Valid {
		t.Fatalf("sub: %v %+v", err, sub.Diagnostics)
	}
	opts := ValidateOptions{Automation: func(id string) (*Compiled, bool) { return sub.Compiled, id == "auto.b" }}
	top, err := Validate([]byte(`{"name":"a","triggers":[{"id":"t","cron":"@hourly"}],"steps":[{"id":"r","repeat":{"count":1000},"do":[{"id":"c","call":"auto.b"}]}]}`), cat, opts)
	if err != nil || !top.Valid {
		t.Fatalf("top: %v %+v", err, top.Diagnostics)
	}
	w := NewSimWorld(func(string) (any, bool) { return nil, false }, itStart, Scenario{}, nil)
	w.SetAutomation("auto.b", sub.Compiled)
	lim := DefaultLimits
	lim.MaxRunOps = 200_000
	res := Run(context.Background(), top.Compiled, w, RunInput{Trigger: TriggerFire{ID: "t"}, Limits: lim})
	if o := res.Outcome; o.Status != StatusLimitExceeded || !strings.Contains(o.Error, "(MaxRunOps)") || !strings.Contains(o.Error, `step "c#`) {
		t.Fatalf("outcome %+v, want limit_exceeded naming MaxRunOps in a call of auto.b", o)
	}
	t.Log(res.Outcome.Error)
}
