package rules

import (
	"github.com/pilothouse/pilothouse/rules/internal/core"

	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pilothouse/pilothouse/pilotage"
)

// TestCallDepthAtValidate: a chain of promoted automations calling each
// other deeper than MaxCallDepth validated (and deployed) fine, and every
// run of it ended limit_exceeded. The validator now knows each body's
// CallDepth and refuses the call that starts a too-deep chain, located at
// that call; a chain at the limit validates and runs to success.
func TestCallDepthAtValidate(t *testing.T) {
	ids := []string{"auto.a0", "auto.a1", "auto.a2", "auto.a3", "auto.a4", "auto.a5"}
	var entries []*pilotage.Entry
	for _, id := range ids {
		entries = append(entries, entry(id, pilotage.KindAutomation, pilotage.RiskRead, "", ""))
	}
	cat := newMapCatalog("chain", entries...)
	bodies := map[string]*Compiled{}
	opts := ValidateOptions{Automation: func(id string) (*Compiled, bool) { c, ok := bodies[id]; return c, ok }}
	body := func(i int) string {
		step := `{"id":"s","stop":"end"}`
		if i > 0 {
			step = `{"id":"c","call":"` + ids[i-1] + `"}`
		}
		return fmt.Sprintf(`{"name":"a%d","triggers":[{"id":"t","cron":"@hourly"}],"steps":[%s]}`, i, step)
	}
	for i := range ids {
		res, err := Validate([]byte(body(i)), cat, opts)
		if err != nil {
			t.Fatal(err)
		}
		if i <= DefaultLimits.MaxCallDepth {
			if !res.Valid {
				t.Fatalf("a%d: %+v", i, res.Diagnostics)
			}
			if res.Compiled.CallDepth != i {
				t.Fatalf("a%d: CallDepth %d", i, res.Compiled.CallDepth)
			}
			bodies[ids[i]] = res.Compiled
			continue
		}
		if res.Valid || len(res.Diagnostics) != 1 {
			t.Fatalf("a%d (calls nest %d deep) validated: %+v", i, i, res.Diagnostics)
		}
		d := res.Diagnostics[0]
		if d.Code != CodeCallDepth || d.Path != "/steps/0/call" || !strings.Contains(d.Message, "limit is 4 (MaxCallDepth)") {
			t.Errorf("diagnostic %+v", d)
		}
	}
	// The deepest allowed chain runs to success.
	top := bodies[ids[DefaultLimits.MaxCallDepth]]
	w := NewSimWorld(func(string) (any, bool) { return nil, false }, itStart, Scenario{}, nil)
	res := Run(context.Background(), top, w, RunInput{Trigger: TriggerFire{ID: "t"}})
	if res.Outcome.Status != core.StatusStopped && res.Outcome.Status != StatusSuccess {
		t.Errorf("chain at the limit: %+v", res.Outcome)
	}
	// A lower configured limit is checked too.
	lim := DefaultLimits
	lim.MaxCallDepth = 2
	res2, _ := Validate([]byte(body(3)), cat, ValidateOptions{Limits: lim, Automation: opts.Automation})
	if res2.Valid {
		t.Errorf("a3 with MaxCallDepth 2 validated")
	}
}
