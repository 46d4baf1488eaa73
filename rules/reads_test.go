package rules

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/rules/internal/interp"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// TestTraceRecordsReads: a condition's and a branch's entries carry the
// values their expressions read (why they held), each value cut, at most
// maxReads of them with a note for the rest; every nested entry names the
// entry it ran inside.
func TestTraceRecordsReads(t *testing.T) {
	long := strings.Repeat("x", 1000)
	many := make([]string, 15)
	for i := range many {
		many[i] = fmt.Sprintf("state('s.%d') == 1", i)
	}
	cases := []struct {
		name, cond string
		state      map[string]any
		want       map[string]string // read → its JSON, "" = must be absent
	}{
		{"state", "state('hall.lux') < 50", map[string]any{"hall.lux": 20.0}, map[string]string{"state('hall.lux')": "20"}},
		{"trigger path", "trigger.to == 'on' && trigger.id == 't'", nil, map[string]string{"trigger.to": `"on"`, "trigger.id": `"t"`, "trigger": ""}},
		{"params path", "params.limit.max > 1", nil, map[string]string{"params.limit.max": "5", "params.limit": ""}},
		{"clock", "hour(now()) >= 0", nil, map[string]string{"now()": `"2026-01-15T22:00:00Z"`}},
		{"long value cut", "state('hall.text') != ''", map[string]any{"hall.text": long}, map[string]string{"state('hall.text')": "truncated"}},
		{"many reads", "!(" + strings.Join(many, " || ") + ")", nil, map[string]string{interp.OmittedKey: "more values"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := itProgram([]*model.Trigger{itState("t", "hall.switch", nil)}, []*model.Condition{itCond("c", tc.cond)},
				itChoose("pick", nil, itArm("yes", tc.cond, itSet("inner", "n", itConst(1)))))
			res := itRun(t, c, itSim(tc.state, Scenario{}), RunInput{Trigger: TriggerFire{ID: "t", Value: "on"},
				Params: map[string]any{"limit": map[string]any{"max": 5.0}}, Cache: itCache})
			if !res.Outcome.OK {
				t.Fatalf("outcome %+v", res.Outcome)
			}
			for _, id := range []string{"c", "pick"} {
				st := itStep(t, res, id)
				in, _ := st.Input.(map[string]any)
				if len(in) > model.MaxReads+1 {
					t.Errorf("%s: %d reads recorded, want at most %d", id, len(in), model.MaxReads+1)
				}
				for k, want := range tc.want {
					got, ok := in[k]
					switch {
					case want == "" && ok:
						t.Errorf("%s: %s recorded: %v", id, k, got)
					case want != "" && !strings.Contains(itJSON(got), want):
						t.Errorf("%s: %s = %s, want it to hold %s (input %v)", id, k, itJSON(got), want, in)
					}
				}
			}
			if p := itStep(t, res, "inner").Parent; p != "pick" {
				t.Errorf("inner's parent = %q, want pick", p)
			}
		})
	}
}

func itJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// TestMonthAndDay: month() and day() read the world's clock in its zone,
// so "winter only" is one condition (an assistant tried now().Month() and
// met a bare type error).
func TestMonthAndDay(t *testing.T) {
	const cond = "month(now()) in [11, 12, 1, 2] && day(now()) == 15"
	for _, tc := range []struct {
		now  string
		want string
	}{
		{"2026-12-15T20:00:00Z", StatusSuccess},
		{"2026-02-15T08:00:00Z", StatusSuccess},
		{"2026-07-15T20:00:00Z", StatusConditionsNotMet},
		{"2026-12-16T20:00:00Z", StatusConditionsNotMet},
	} {
		now, _ := time.Parse(time.RFC3339, tc.now)
		c := itProgram([]*model.Trigger{itState("t", "hall.switch", nil)}, []*model.Condition{itCond("winter", cond)},
			itSet("inner", "n", itConst(1)))
		res := itRun(t, c, itSim(nil, Scenario{Now: &now}), RunInput{Trigger: TriggerFire{ID: "t", Value: "on"}, Cache: itCache})
		if res.Outcome.Status != tc.want {
			t.Errorf("%s: %s, want %s (%s)", tc.now, res.Outcome.Status, tc.want, res.Outcome.Error)
		}
	}
}
