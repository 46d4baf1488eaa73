package engine

import (
	"slices"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// withNextFires is plan with each cron, time and sun trigger's step
// saying when the trigger would next fire were the rule deployed now,
// computed as the scheduler computes a deployed rule's next_fire
// (rules.RunTrigger.NextTime in the server's zone), so that validate
// answers what otherwise only a deploy shows. BuildPlan stays a function
// of the program alone: the note goes on a copy, here.
func (e *Engine) withNextFires(plan *pilotage.Plan, c *rules.Compiled) *pilotage.Plan {
	if plan == nil || c == nil {
		return plan
	}
	now, out := e.Now(), *plan
	out.Steps = slices.Clone(plan.Steps)
	for i := range out.Steps {
		s := &out.Steps[i]
		if s.Arm == nil || s.Arm.Branch != rules.TriggersStepID {
			continue
		}
		t := c.Trigger(s.ID)
		if t == nil {
			continue
		}
		if next := t.NextTime(now, e.cfg.TimeZone, e.cfg.Location); !next.IsZero() {
			s.Description += "; deployed now, it would next fire at " + next.Format(time.RFC3339)
		}
	}
	return &out
}
