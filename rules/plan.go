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
// innermost construct is named). A call's risk is its entry's as validated
// (c.Entry). It is a function of c alone: a held program's plan is derived
// again whenever it is needed, rather than held.
func BuildPlan(c *Compiled) *pilotage.Plan {
	b := &planBuilder{entry: c.Entry, ref: c.refParam}
	read := pilotage.HintsOf(pilotage.RiskRead)
	b.add(pilotage.PlanStep{ID: TriggersStepID, Kind: PlanKindTrigger,
		Description: fmt.Sprintf("the run starts when any of %d trigger(s) fires", len(c.triggers)),
		Risk:        pilotage.RiskRead, RiskHints: read})
	for i := range c.triggers {
		t := &c.triggers[i]
		b.add(pilotage.PlanStep{ID: t.id, Kind: PlanKindTrigger + ":" + string(t.Kind()),
			Description: describeTrigger(t, c.zone), Risk: pilotage.RiskRead, RiskHints: read,
			Arm: &pilotage.Arm{Branch: TriggersStepID, Label: t.id}})
	}
	for _, cd := range c.conds {
		desc := ""
		switch {
		case cd.x != nil:
			desc = "only if " + cd.x.Src
		case cd.win != nil:
			desc = cd.win.describe(c.zone)
		}
		b.add(pilotage.PlanStep{ID: cd.id, Kind: PlanKindCondition, Description: desc,
			Risk: pilotage.RiskRead, RiskHints: read})
	}
	b.steps(c.steps, planCtx{})
	plan := &pilotage.Plan{Steps: b.out}
	hints := make([]pilotage.RiskHints, len(b.out))
	for i, s := range b.out {
		hints[i] = s.RiskHints
	}
	plan.MaxRiskHints = pilotage.Aggregate(hints...)
	plan.MaxRisk = pilotage.RiskOf(plan.MaxRiskHints)
	plan.Summary = b.summary(c, plan.MaxRisk)
	return plan
}

type planCtx struct {
	arm  *pilotage.Arm
	loop string
}

type planBuilder struct {
	entry func(id string) *pilotage.Entry
	ref   func(name string) *RefParam
	out   []pilotage.PlanStep
	calls []string
}

func (b *planBuilder) add(s pilotage.PlanStep) { b.out = append(b.out, s) }

func (b *planBuilder) steps(list []runStep, ctx planCtx) {
	for i := range list {
		b.step(&list[i], ctx)
	}
}

func (b *planBuilder) step(s *runStep, ctx planCtx) {
	ps := pilotage.PlanStep{ID: s.id, Kind: string(s.Kind()), Risk: pilotage.RiskRead,
		RiskHints: pilotage.HintsOf(pilotage.RiskRead), Arm: ctx.arm, Loop: ctx.loop,
		Description: describeStep(s)}
	switch {
	case s.Kind() == StepCall && s.flags&callParam != 0:
		// Not bound yet: the worst its constraints admit.
		ps.RiskHints = pilotage.HintsOf("")
		if r := b.ref(s.text); r != nil {
			ps.RiskHints = r.Hints()
			ps.Description += " (catalog param: " + r.Describe() + ")"
		}
		ps.Risk = pilotage.RiskOf(ps.RiskHints)
		b.calls = append(b.calls, "{{ params."+s.text+" }}")
	case s.Kind() == StepCall:
		ps.Calls = []string{s.text}
		if e := b.entry(s.text); e != nil {
			ps.Risk, ps.RiskHints = e.Risk, e.RiskHints
		} else {
			// Unknown at plan time (should not happen for a valid
			// program): fail closed.
			ps.Risk = pilotage.RiskSecurity
			ps.RiskHints = pilotage.HintsOf("")
		}
		b.calls = append(b.calls, s.text)
	}
	b.add(ps)
	for ch := range s.children() {
		sub := planCtx{arm: &pilotage.Arm{Branch: s.id, Label: ch.label}}
		if ch.loop {
			sub = planCtx{loop: s.id}
		}
		b.steps(ch.steps, sub)
	}
}

func (b *planBuilder) summary(c *Compiled, risk pilotage.Risk) string {
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
	throttle := ""
	if c.throttle > 0 {
		throttle = ", at most once per " + shortDuration(c.throttle)
	}
	return fmt.Sprintf("rule %s (mode %s%s): %d trigger(s), %d condition(s); %s; max risk %s",
		c.name, c.Mode(), throttle, len(c.triggers), len(c.conds), calls, risk)
}

func describeTrigger(t *RunTrigger, zone string) string {
	switch t.Kind() {
	case TriggerState:
		s := "when " + t.entity + " changes"
		if t.fromSet {
			s += " from " + compactJSON(t.from)
		}
		if t.toSet {
			s += " to " + compactJSON(t.to)
		}
		return s + holdFor(t.hold.String(), t.hold != 0)
	case TriggerNumeric:
		s := "when " + t.entity + " goes"
		above, below := t.bounds()
		if above != nil {
			s += fmt.Sprintf(" above %g", *above)
		}
		if below != nil {
			if above != nil {
				s += " and"
			}
			s += fmt.Sprintf(" below %g", *below)
		}
		return s + holdFor(t.hold.String(), t.hold != 0)
	case TriggerEvent:
		s := "on event " + t.entity
		if _, isList := t.to.([]any); t.toSet && isList {
			s += " in " + compactJSON(t.to)
		} else if t.toSet {
			s += " = " + compactJSON(t.to)
		}
		return s
	case TriggerCron:
		return "on schedule " + t.Spec() + inZone(zone)
	case TriggerTime:
		return "every day at " + t.Spec() + inZone(zone)
	case TriggerSun:
		sun, offset := t.Sun()
		return "at " + sunText(sun, offset) + " (the server's location)"
	}
	return ""
}

// inZone names the zone clock times are read in (nothing when unknown).
func inZone(zone string) string {
	if zone == "" {
		return ""
	}
	return " (" + zone + ")"
}

func holdFor(d string, set bool) string {
	if !set {
		return ""
	}
	return " and stays for " + d
}

func describeStep(s *runStep) string {
	switch s.Kind() {
	case StepCall:
		target := s.text
		if s.flags&callParam != 0 {
			target = "{{ params." + s.text + " }}"
		}
		return "call " + target + describeArgs(s.vals)
	case StepDelay:
		return "delay " + templateText(s.more.(*durSpec).t)
	case StepWait:
		return describeWait(s.more.(*waitStep))
	case StepIf:
		if x := s.more.(*ifStep); x.cond != nil {
			return "if " + x.cond.Src
		}
	case StepChoose:
		return fmt.Sprintf("choose one of %d arm(s) or default", len(s.more.(*chooseStep).arms))
	case StepRepeat:
		return describeRepeat(s.more.(*repeatStep))
	case StepSet:
		names := make([]string, len(s.vals))
		for i, v := range s.vals {
			names[i] = v.name
		}
		return "set vars." + strings.Join(names, ", vars.")
	case StepStop:
		if s.flags&stopError != 0 {
			return "stop with error: " + s.text
		}
		return "stop: " + s.text
	}
	return ""
}

// describeArgs shows a call's arguments: constants as JSON, templates as
// written (a deployed rule's params-only templates are constants by then).
func describeArgs(vals []namedTemplate) string {
	if len(vals) == 0 {
		return ""
	}
	args := make(map[string]any, len(vals))
	for _, v := range vals {
		switch {
		case v.t == nil:
		case v.t.IsConst:
			args[v.name] = v.t.Const
		default:
			args[v.name] = templateText(v.t)
		}
	}
	return " with " + compactJSON(args)
}

func describeWait(w *waitStep) string {
	var d string
	switch {
	case w.byParam:
		d = "wait for {{ params." + w.state + w.event + " }}"
	case w.state != "":
		d = "wait until " + w.state
		if w.to.Set {
			d += " is " + compactJSON(w.to.V)
		}
		if w.above != nil {
			d += fmt.Sprintf(" > %g", *w.above)
		}
		if w.below != nil {
			d += fmt.Sprintf(" < %g", *w.below)
		}
	case w.event != "":
		d = "wait for event " + w.event
		if w.to.Set {
			d += " " + compactJSON(w.to.V)
		}
	case w.expr != nil:
		d = "wait until " + w.expr.Src
	}
	if w.hold != nil {
		d += " for " + templateText(w.hold.t)
	}
	if w.timeout > 0 {
		d += " (timeout " + w.timeout.String() + ")"
	}
	return d
}

func describeRepeat(r *repeatStep) string {
	switch {
	case r.count != nil:
		return "repeat " + templateText(r.count) + " times"
	case r.while != nil:
		return fmt.Sprintf("repeat while %s (at most %d)", r.while.Src, r.max)
	case r.until != nil:
		return fmt.Sprintf("repeat until %s (at most %d)", r.until.Src, r.max)
	case r.forEach != nil:
		return "repeat for each of " + templateText(r.forEach)
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
