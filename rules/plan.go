package rules

import (
	"fmt"
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
)

// Plan step kinds besides the step kinds themselves.
const (
	PlanKindTrigger   = "trigger"   // the reserved "triggers" branch
	PlanKindCondition = "condition" // one condition
)

// BuildPlan derives the deploy-mode plan of a valid program (spec §5.6): it
// describes the body. The first step is the branch "triggers" whose arms are
// the triggers (kind "trigger:<kind>"), then the conditions, then the body:
// branches and loops are steps of their own, every arm's steps are listed
// with arm, loop bodies once with loop (arm wins inside a loop: the
// innermost construct is named). entry looks up the referenced catalog
// entries (nil for an unknown id).
func BuildPlan(p *Program, entry func(id string) *pilotage.Entry) *pilotage.Plan {
	b := &planBuilder{entry: entry}
	read := pilotage.HintsOf(pilotage.RiskRead)
	b.add(pilotage.PlanStep{ID: TriggersStepID, Kind: PlanKindTrigger,
		Description: fmt.Sprintf("the run starts when any of %d trigger(s) fires", len(p.Triggers)),
		Risk:        pilotage.RiskRead, RiskHints: read})
	for _, t := range p.Triggers {
		b.add(pilotage.PlanStep{ID: t.ID, Kind: PlanKindTrigger + ":" + string(t.Kind),
			Description: describeTrigger(t), Risk: pilotage.RiskRead, RiskHints: read,
			Arm: &pilotage.Arm{Branch: TriggersStepID, Label: t.ID}})
	}
	for _, c := range p.Conditions {
		desc := ""
		if c.Expr != nil {
			desc = "only if " + c.Expr.Src
		}
		b.add(pilotage.PlanStep{ID: c.ID, Kind: PlanKindCondition, Description: desc,
			Risk: pilotage.RiskRead, RiskHints: read})
	}
	b.steps(p.Steps, planCtx{})
	plan := &pilotage.Plan{Steps: b.out}
	hints := make([]pilotage.RiskHints, len(b.out))
	for i, s := range b.out {
		hints[i] = s.RiskHints
	}
	plan.MaxRiskHints = pilotage.Aggregate(hints...)
	plan.MaxRisk = pilotage.RiskOf(plan.MaxRiskHints)
	plan.Summary = b.summary(p, plan.MaxRisk)
	return plan
}

type planCtx struct {
	arm  *pilotage.Arm
	loop string
}

type planBuilder struct {
	entry func(id string) *pilotage.Entry
	out   []pilotage.PlanStep
	calls []string
}

func (b *planBuilder) add(s pilotage.PlanStep) { b.out = append(b.out, s) }

func (b *planBuilder) steps(list []*Step, ctx planCtx) {
	for _, s := range list {
		b.step(s, ctx)
	}
}

func (b *planBuilder) step(s *Step, ctx planCtx) {
	ps := pilotage.PlanStep{ID: s.ID, Kind: string(s.Kind), Risk: pilotage.RiskRead,
		RiskHints: pilotage.HintsOf(pilotage.RiskRead), Arm: ctx.arm, Loop: ctx.loop,
		Description: describeStep(s)}
	if s.Kind == StepCall {
		ps.Calls = []string{s.Call}
		if e := b.entry(s.Call); e != nil {
			ps.Risk, ps.RiskHints = e.Risk, e.RiskHints
		} else {
			// Unknown at plan time (should not happen for a valid
			// program): fail closed.
			ps.Risk = pilotage.RiskSecurity
			ps.RiskHints = pilotage.HintsOf("")
		}
		b.calls = append(b.calls, s.Call)
	}
	b.add(ps)
	for ch := range s.Children() {
		sub := planCtx{arm: &pilotage.Arm{Branch: s.ID, Label: ch.Label}}
		if ch.Loop {
			sub = planCtx{loop: s.ID}
		}
		b.steps(ch.Steps, sub)
	}
}

func (b *planBuilder) summary(p *Program, risk pilotage.Risk) string {
	var uniq []string
	seen := map[string]bool{}
	for _, c := range b.calls {
		if !seen[c] {
			seen[c] = true
			uniq = append(uniq, c)
		}
	}
	calls := "calls nothing"
	if len(uniq) > 0 {
		calls = "calls " + strings.Join(uniq, ", ")
	}
	return fmt.Sprintf("rule %s (mode %s): %d trigger(s), %d condition(s); %s; max risk %s",
		p.Name, p.Mode, len(p.Triggers), len(p.Conditions), calls, risk)
}

func describeTrigger(t *Trigger) string {
	switch t.Kind {
	case TriggerState:
		s := "when " + t.Entity + " changes"
		if t.From.Set {
			s += " from " + compactJSON(t.From.V)
		}
		if t.To.Set {
			s += " to " + compactJSON(t.To.V)
		}
		return s + holdFor(t.For.String(), t.For != 0)
	case TriggerNumeric:
		s := "when " + t.Entity + " goes"
		if t.Above != nil {
			s += fmt.Sprintf(" above %g", *t.Above)
		}
		if t.Below != nil {
			if t.Above != nil {
				s += " and"
			}
			s += fmt.Sprintf(" below %g", *t.Below)
		}
		return s + holdFor(t.For.String(), t.For != 0)
	case TriggerEvent:
		s := "on event " + t.Entity
		if t.To.Set {
			s += " = " + compactJSON(t.To.V)
		}
		return s
	case TriggerCron:
		return "on schedule " + t.Cron
	case TriggerTime:
		return "every day at " + t.At
	case TriggerSun:
		if t.Offset != 0 {
			return fmt.Sprintf("at %s %+v", t.Sun, t.Offset)
		}
		return "at " + t.Sun
	}
	return ""
}

func holdFor(d string, set bool) string {
	if !set {
		return ""
	}
	return " and stays for " + d
}

func describeStep(s *Step) string {
	switch s.Kind {
	case StepCall:
		return "call " + s.Call
	case StepDelay:
		return "delay " + templateText(s.Delay)
	case StepWait:
		return describeWait(s)
	case StepIf:
		if s.If != nil {
			return "if " + s.If.Src
		}
	case StepChoose:
		return fmt.Sprintf("choose one of %d arm(s) or default", len(s.Choose))
	case StepRepeat:
		return describeRepeat(s.Repeat)
	case StepSet:
		return "set vars." + strings.Join(sortedKeys(s.Set), ", vars.")
	case StepStop:
		if s.Error {
			return "stop with error: " + s.Stop
		}
		return "stop: " + s.Stop
	}
	return ""
}

func describeWait(s *Step) string {
	w := s.Wait
	if w == nil {
		return "wait"
	}
	var d string
	switch {
	case w.State != "":
		d = "wait until " + w.State
		if w.To.Set {
			d += " is " + compactJSON(w.To.V)
		}
		if w.Above != nil {
			d += fmt.Sprintf(" > %g", *w.Above)
		}
		if w.Below != nil {
			d += fmt.Sprintf(" < %g", *w.Below)
		}
	case w.Event != "":
		d = "wait for event " + w.Event
	case w.Expr != nil:
		d = "wait until " + w.Expr.Src
	}
	if w.For != nil {
		d += " for " + templateText(w.For)
	}
	if s.Timeout > 0 {
		d += " (timeout " + s.Timeout.String() + ")"
	}
	return d
}

func describeRepeat(r *RepeatSpec) string {
	switch {
	case r == nil:
		return "repeat"
	case r.Count != nil:
		return "repeat " + templateText(r.Count) + " times"
	case r.While != nil:
		return fmt.Sprintf("repeat while %s (at most %d)", r.While.Src, r.Max)
	case r.Until != nil:
		return fmt.Sprintf("repeat until %s (at most %d)", r.Until.Src, r.Max)
	case r.ForEach != nil:
		return "repeat for each of " + templateText(r.ForEach)
	}
	return "repeat"
}

func templateText(t *Template) string {
	switch {
	case t == nil:
		return ""
	case t.IsConst:
		if s, ok := t.Const.(string); ok {
			return s
		}
		return compactJSON(t.Const)
	case t.Whole != nil:
		return "{{ " + t.Whole.Src + " }}"
	}
	var b strings.Builder
	for _, p := range t.Parts {
		if p.Expr != nil {
			b.WriteString("{{ " + p.Expr.Src + " }}")
		} else {
			b.WriteString(p.Text)
		}
	}
	if b.Len() == 0 {
		return "(value)"
	}
	return b.String()
}
