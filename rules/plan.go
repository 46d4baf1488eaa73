package rules

import (
	"fmt"
	"slices"
	"strings"
	"time"

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
		Description: triggersText(len(c.triggers)),
		Risk:        pilotage.RiskRead, RiskHints: read})
	for i := range c.triggers {
		t := &c.triggers[i]
		b.add(pilotage.PlanStep{ID: t.id, Kind: PlanKindTrigger + ":" + string(t.Kind()),
			Description: describeTrigger(t, c.zone, c.loc), Risk: pilotage.RiskRead, RiskHints: read,
			Arm: &pilotage.Arm{Branch: TriggersStepID, Label: t.id}})
	}
	for _, cd := range c.conds {
		desc := ""
		switch {
		case cd.x != nil:
			desc = "Only if " + cd.x.Src
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
	case s.Kind() == StepCall && s.flags&callSelect != 0:
		// What it resolves to now, and the most any of those may do.
		sel := s.more.(*Selector)
		ps.Calls = sel.now
		ps.RiskHints = sel.hints
		ps.Risk = pilotage.RiskOf(ps.RiskHints)
		b.calls = append(b.calls, sel.now...)
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
	calls := "it calls nothing"
	if len(uniq) > 0 {
		calls = "it calls " + JoinList(uniq, "and")
	}
	throttle := ""
	if c.throttle > 0 {
		throttle = ", at most once " + every(c.throttle)
	}
	var when string
	switch n := len(c.triggers); n {
	case 0:
		when = "has no triggers"
	case 1:
		when = "runs when its trigger fires"
	default:
		when = "runs when any of its " + Plural(n, "trigger", "") + " fires"
	}
	switch n := len(c.conds); n {
	case 0:
	case 1:
		when += " and its condition holds"
	default:
		when += " and all " + Plural(n, "condition", "") + " hold"
	}
	return fmt.Sprintf("Rule %s (mode %s%s) %s; %s. Highest risk: %s.",
		c.name, c.Mode(), throttle, when, calls, risk)
}

// triggersText describes the reserved "triggers" branch.
func triggersText(n int) string {
	switch n {
	case 0:
		return "The run has no triggers"
	case 1:
		return "The run starts when this trigger fires"
	}
	return "The run starts when any of these " + Plural(n, "trigger", "") + " fires"
}

// describeTrigger says when a trigger fires; clock times are read in
// zone, named as zone, whose daylight-saving changes a schedule's phrase
// says what they do to it.
func describeTrigger(t *RunTrigger, zone string, loc *time.Location) string {
	switch t.Kind() {
	case TriggerState:
		s := "When " + triggerSubject(t) + " changes"
		notTo, notFrom := t.not()
		if t.fromSet {
			s += " from " + oneOfText(t.from)
		} else if notFrom.Set {
			s += " from anything but " + oneOfText(notFrom.V)
		}
		if t.toSet {
			s += " to " + oneOfText(t.to)
		} else if notTo.Set {
			s += " to anything but " + oneOfText(notTo.V)
		}
		return s + holdFor("and stays so", t.hold)
	case TriggerNumeric:
		s := "When " + triggerSubject(t) + " goes"
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
		return s + holdFor("and stays there", t.hold)
	case TriggerEvent:
		s := "When event " + t.entity + " arrives"
		if list, isList := t.to.([]any); t.toSet && isList {
			s += " with " + valuesText(list, "or")
		} else if t.toSet {
			s += " with " + compactJSON(t.to)
		}
		return s
	case TriggerCron:
		return cronWords(t.Spec()) + inZone(zone, dstNote(t.Schedule(), loc))
	case TriggerTime:
		return "Every day at " + t.Spec() + inZone(zone, dstNote(t.Schedule(), loc))
	case TriggerSun:
		sun, offset := t.Sun()
		return "At " + SunPhrase(sun, offset) + " (the server's location)"
	case TriggerAvailable:
		s := "When " + t.entity + "'s device goes offline or comes back online"
		if t.toSet {
			s = "When " + t.entity + "'s device " + availablePhrase(t.to)
		}
		return s + holdFor("and stays so", t.hold)
	}
	return ""
}

// oneOfText is a filter's value, or its list as "a", "b" or "c".
func oneOfText(v any) string {
	if list, ok := v.([]any); ok {
		return valuesText(list, "or")
	}
	return compactJSON(v)
}

// valuesText lists values as JSON joined by conj: `"a", "b" or "c"`.
func valuesText(list []any, conj string) string {
	parts := make([]string, len(list))
	for i, v := range list {
		parts[i] = compactJSON(v)
	}
	return JoinList(parts, conj)
}

// inZone names the zone clock times are read in, with a note on them
// (nothing when the zone is unknown).
func inZone(zone, note string) string {
	if zone == "" {
		return ""
	}
	return " (" + zone + note + ")"
}

func holdFor(how string, d time.Duration) string {
	if d == 0 {
		return ""
	}
	return " " + how + " for " + HumanDuration(d)
}

func describeStep(s *runStep) string {
	switch s.Kind() {
	case StepCall:
		target := s.text
		if s.flags&callParam != 0 {
			target = "{{ params." + s.text + " }}"
		}
		if sel, ok := s.more.(*Selector); ok {
			target = sel.Describe() + " (" + sel.nowText() + ")"
		}
		return "Call " + target + describeArgs(s.vals)
	case StepDelay:
		return "Wait " + durationText(s.more.(*durSpec))
	case StepWait:
		return describeWait(s.more.(*waitStep))
	case StepIf:
		if x := s.more.(*ifStep); x.cond != nil {
			return "If " + x.cond.Src
		}
	case StepChoose:
		return describeChoose(s.more.(*chooseStep))
	case StepRepeat:
		return describeRepeat(s.more.(*repeatStep))
	case StepSet:
		names := make([]string, len(s.vals))
		for i, v := range s.vals {
			names[i] = "vars." + v.name
		}
		return "Set " + JoinList(names, "and")
	case StepStop:
		if s.flags&stopError != 0 {
			return "Stop the run with an error: " + s.text
		}
		return "Stop the run: " + s.text
	}
	return ""
}

// describeArgs shows a call's arguments by name, in name order: constants
// as JSON, templates as written (a deployed rule's params-only templates
// are constants by then): ` with brightness 20 and state "ON"`.
func describeArgs(vals []namedTemplate) string {
	var parts []string
	for _, v := range vals {
		switch {
		case v.t == nil:
			continue
		case v.t.IsConst:
			parts = append(parts, v.name+" "+compactJSON(v.t.Const))
		case v.t.Whole != nil:
			parts = append(parts, v.name+" "+templateText(v.t))
		default:
			parts = append(parts, v.name+" "+compactJSON(templateText(v.t)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	slices.Sort(parts)
	return " with " + JoinList(parts, "and")
}

func describeChoose(c *chooseStep) string {
	s := "Choose the first of these " + Plural(len(c.arms), "option", "") + " whose condition holds"
	if len(c.arms) == 1 {
		s = "Take this option if its condition holds"
	}
	if len(c.def) > 0 {
		return s + ", else the default"
	}
	return s + ", else nothing"
}

func describeWait(w *waitStep) string {
	var d string
	switch {
	case w.byParam && w.event != "":
		d = "Wait for the event {{ params." + w.event + " }}"
		if w.to.Set {
			d += " with " + compactJSON(w.to.V)
		}
	case w.state != "":
		d = "Wait until " + w.state
		if w.byParam {
			d = "Wait until {{ params." + w.state + " }}"
		}
		var is []string
		if w.to.Set {
			is = append(is, "is "+compactJSON(w.to.V))
		}
		if w.above != nil {
			is = append(is, fmt.Sprintf("is above %g", *w.above))
		}
		if w.below != nil {
			is = append(is, fmt.Sprintf("below %g", *w.below))
			if w.above == nil {
				is[len(is)-1] = "is " + is[len(is)-1]
			}
		}
		if len(is) > 0 {
			d += " " + JoinList(is, "and")
		}
	case w.event != "":
		d = "Wait for event " + w.event
		if w.to.Set {
			d += " with " + compactJSON(w.to.V)
		}
	case w.expr != nil:
		d = "Wait until " + w.expr.Src
	}
	if w.hold != nil {
		d += " for " + durationText(w.hold)
	}
	if w.timeout > 0 {
		then := "then the run times out"
		if w.cont {
			then = "then the run goes on"
		}
		d += " (at most " + HumanDuration(w.timeout) + ", " + then + ")"
	}
	return d
}

func describeRepeat(r *repeatStep) string {
	switch {
	case r.count != nil:
		if r.count.IsConst && compactJSON(r.count.Const) == "1" {
			return "Run once"
		}
		return "Repeat " + templateText(r.count) + " times"
	case r.while != nil:
		return fmt.Sprintf("Repeat while %s (at most %s)", r.while.Src, Plural(r.max, "time", ""))
	case r.until != nil:
		return fmt.Sprintf("Repeat until %s (at most %s)", r.until.Src, Plural(r.max, "time", ""))
	case r.forEach != nil:
		return "Repeat for each item of " + templateText(r.forEach)
	}
	return "Repeat"
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
