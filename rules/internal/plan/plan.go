package plan

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/interp"
	"github.com/pilothouse/pilothouse/rules/internal/model"
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
func BuildPlan(c *model.Compiled) *pilotage.Plan {
	b := &planBuilder{entry: c.Entry, ref: c.RefParam, c: c}
	read := pilotage.HintsOf(pilotage.RiskRead)
	b.add(pilotage.PlanStep{ID: interp.TriggersStepID, Kind: PlanKindTrigger,
		Description: TriggersText(len(c.RunTriggers)),
		Risk:        pilotage.RiskRead, RiskHints: read})
	for i := range c.RunTriggers {
		t := &c.RunTriggers[i]
		ps := pilotage.PlanStep{ID: t.TriggerID, Kind: PlanKindTrigger + ":" + string(t.Kind()),
			Description: DescribeTrigger(t, c.Zone, c.Loc), Risk: pilotage.RiskRead, RiskHints: read,
			Arm: &pilotage.Arm{Branch: interp.TriggersStepID, Label: t.TriggerID}}
		if sel := t.Selector(); sel != nil {
			ps.Selector = sel.Members(model.SelectorMembers.Property)
		}
		b.add(ps)
	}
	for _, cd := range c.Conds {
		desc := ""
		switch {
		case cd.Expr != nil:
			desc = "Only if " + cd.Expr.Src + selectorsText(c, cd.Expr)
		case cd.Window != nil:
			desc = cd.Window.Describe(c.Zone)
		}
		b.add(pilotage.PlanStep{ID: cd.ID, Kind: PlanKindCondition, Description: desc,
			Risk: pilotage.RiskRead, RiskHints: read})
	}
	b.steps(c.Steps, planCtx{})
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
	ref   func(name string) *model.RefParam
	c     *model.Compiled // what its selector objects resolved to
	out   []pilotage.PlanStep
	calls []string
	// selects: a call is by selector, so the plan says what bounds it.
	selects bool
}

func (b *planBuilder) add(s pilotage.PlanStep) { b.out = append(b.out, s) }

func (b *planBuilder) steps(list []model.RunStep, ctx planCtx) {
	for i := range list {
		b.step(&list[i], ctx)
	}
}

func (b *planBuilder) step(s *model.RunStep, ctx planCtx) {
	ps := pilotage.PlanStep{ID: s.ID, Kind: string(s.Kind()), Risk: pilotage.RiskRead,
		RiskHints: pilotage.HintsOf(pilotage.RiskRead), Arm: ctx.arm, Loop: ctx.loop,
		Description: describeStep(s) + selectorsText(b.c, stepCond(s))}
	switch {
	case s.Kind() == model.StepCall && s.Flags&model.CallParam != 0:
		// Not bound yet: the worst its constraints admit.
		ps.RiskHints = pilotage.HintsOf("")
		if r := b.ref(s.Text); r != nil {
			ps.RiskHints = r.Hints()
			ps.Description += " (catalog param: " + r.Describe() + ")"
		}
		ps.Risk = pilotage.RiskOf(ps.RiskHints)
		b.calls = append(b.calls, "{{ params."+s.Text+" }}")
	case s.Kind() == model.StepCall && s.Flags&model.CallSelect != 0:
		// What it resolves to now, and the most any of those may do.
		sel := s.More.(*model.Selector)
		ps.Calls, ps.Selector = sel.Resolved, sel.Members(model.SelectorMembers.Call)
		ps.RiskHints = sel.Hints
		ps.Risk = pilotage.RiskOf(ps.RiskHints)
		b.calls = append(b.calls, sel.Describe()+" ("+sel.NowText()+")")
		b.selects = true
	case s.Kind() == model.StepCall:
		ps.Calls = []string{s.Text}
		if e := b.entry(s.Text); e != nil {
			ps.Risk, ps.RiskHints = e.Risk, e.RiskHints
		} else {
			// Unknown at plan time (should not happen for a valid
			// program): fail closed.
			ps.Risk = pilotage.RiskSecurity
			ps.RiskHints = pilotage.HintsOf("")
		}
		b.calls = append(b.calls, s.Text)
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

func (b *planBuilder) summary(c *model.Compiled, risk pilotage.Risk) string {
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
		calls = "it calls " + core.JoinList(uniq, "and")
	}
	throttle := ""
	if c.ThrottleFor > 0 {
		throttle = ", at most once " + Every(c.ThrottleFor)
	}
	var when string
	switch n := len(c.RunTriggers); n {
	case 0:
		when = "has no triggers"
	case 1:
		when = "runs when its trigger fires"
	default:
		when = "runs when any of its " + core.Plural(n, "trigger", "") + " fires"
	}
	switch n := len(c.Conds); n {
	case 0:
	case 1:
		when += " and its condition holds"
	default:
		when += " and all " + core.Plural(n, "condition", "") + " hold"
	}
	bound := ""
	if b.selects {
		// The engine holds a firing to the approved risk (its ceiling).
		bound = "; a selector calls what it matches when the rule runs, never an entry above this risk (a riskier one that joins later is refused)"
	}
	return fmt.Sprintf("Rule %s (mode %s%s) %s; %s. Highest risk: %s%s.",
		c.ProgramName, c.Mode(), throttle, when, calls, risk, bound)
}

// TriggersText describes the reserved "triggers" branch.
func TriggersText(n int) string {
	switch n {
	case 0:
		return "The run has no triggers"
	case 1:
		return "The run starts when this trigger fires"
	}
	return "The run starts when any of these " + core.Plural(n, "trigger", "") + " fires"
}

// DescribeTrigger says when a trigger fires; clock times are read in
// zone, named as zone, whose daylight-saving changes a schedule's phrase
// says what they do to it.
func DescribeTrigger(t *model.RunTrigger, zone string, loc *time.Location) string {
	switch t.Kind() {
	case model.TriggerState:
		s := "When " + triggerSubject(t) + " changes"
		notTo, notFrom := t.Not()
		if t.FromSet {
			s += " from " + oneOfText(t.FromValue)
		} else if notFrom.Set {
			s += " from anything but " + oneOfText(notFrom.V)
		}
		if t.ToSet {
			s += " to " + oneOfText(t.ToValue)
		} else if notTo.Set {
			s += " to anything but " + oneOfText(notTo.V)
		}
		return s + holdText(t, "and stays so") + eachText(t)
	case model.TriggerNumeric:
		return "When " + triggerSubject(t) + " goes " + boundsText(t) + holdText(t, "and stays there") + eachText(t)
	case model.TriggerEvent:
		s := "When event " + t.EntityID + " arrives"
		if list, isList := t.ToValue.([]any); t.ToSet && isList {
			s += " with " + valuesText(list, "or")
		} else if t.ToSet {
			s += " with " + core.CompactJSON(t.ToValue)
		}
		return s
	case model.TriggerCron:
		if in := t.Inputs(); model.HasField(in, "cron") {
			return "On the cron schedule " + model.FieldText(in, "cron", "") + inZone(zone, "")
		}
		return clock.CronWords(t.Spec()) + inZone(zone, clock.DSTNote(t.Schedule(), loc))
	case model.TriggerTime:
		return "Every day at " + atText(t) + inZone(zone, clock.DSTNote(t.Schedule(), loc))
	case model.TriggerSun:
		return "At " + sunText(t) + " (the server's location)"
	case model.TriggerAvailable:
		s := "When " + availSubject(t) + " goes offline or comes back online"
		if t.ToSet {
			s = "When " + availSubject(t) + " " + core.AvailablePhrase(t.ToValue)
		}
		return s + holdText(t, "and stays so") + eachText(t)
	}
	return ""
}

// oneOfText is a filter's value, or its list as "a", "b" or "c".
func oneOfText(v any) string {
	if list, ok := v.([]any); ok {
		return valuesText(list, "or")
	}
	return core.CompactJSON(v)
}

// valuesText lists values as JSON joined by conj: `"a", "b" or "c"`.
func valuesText(list []any, conj string) string {
	parts := make([]string, len(list))
	for i, v := range list {
		parts[i] = core.CompactJSON(v)
	}
	return core.JoinList(parts, conj)
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
	return " " + how + " for " + clock.HumanDuration(d)
}

func describeStep(s *model.RunStep) string {
	switch s.Kind() {
	case model.StepCall:
		target := s.Text
		if s.Flags&model.CallParam != 0 {
			target = "{{ params." + s.Text + " }}"
		}
		if sel, ok := s.More.(*model.Selector); ok {
			target = sel.Describe() + " (" + sel.NowText() + ")"
		}
		return "Call " + target + describeArgs(s.Vals)
	case model.StepDelay:
		return "Wait " + durationText(s.More.(*model.DurSpec))
	case model.StepWait:
		return describeWait(s.More.(*model.WaitStep))
	case model.StepIf:
		if x := s.More.(*model.IfStep); x.Cond != nil {
			return "If " + x.Cond.Src
		}
	case model.StepChoose:
		return describeChoose(s.More.(*model.ChooseStep))
	case model.StepRepeat:
		return describeRepeat(s.More.(*model.RepeatStep))
	case model.StepSet:
		names := make([]string, len(s.Vals))
		for i, v := range s.Vals {
			names[i] = "vars." + v.Name
		}
		return "Set " + core.JoinList(names, "and")
	case model.StepStop:
		if s.Flags&model.StopError != 0 {
			return "Stop the run with an error: " + s.Text
		}
		return "Stop the run: " + s.Text
	}
	return ""
}

// describeArgs shows a call's arguments by name, in name order: constants
// as JSON, templates as written (a deployed rule's params-only templates
// are constants by then): ` with brightness 20 and state "ON"`.
func describeArgs(vals []model.NamedTemplate) string {
	var parts []string
	for _, v := range vals {
		switch {
		case v.Tmpl == nil:
			continue
		case v.Tmpl.IsConst:
			parts = append(parts, v.Name+" "+core.CompactJSON(v.Tmpl.Const))
		case v.Tmpl.Whole != nil:
			parts = append(parts, v.Name+" "+templateText(v.Tmpl))
		default:
			parts = append(parts, v.Name+" "+core.CompactJSON(templateText(v.Tmpl)))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	slices.Sort(parts)
	return " with " + core.JoinList(parts, "and")
}

func describeChoose(c *model.ChooseStep) string {
	s := "Choose the first of these " + core.Plural(len(c.Arms), "option", "") + " whose condition holds"
	if len(c.Arms) == 1 {
		s = "Take this option if its condition holds"
	}
	if len(c.Def) > 0 {
		return s + ", else the default"
	}
	return s + ", else nothing"
}

func describeWait(w *model.WaitStep) string {
	var d string
	switch {
	case w.ByParam && w.Event != "":
		d = "Wait for the event {{ params." + w.Event + " }}"
		if w.To.Set {
			d += " with " + core.CompactJSON(w.To.V)
		}
	case w.State != "":
		d = "Wait until " + w.State
		if w.ByParam {
			d = "Wait until {{ params." + w.State + " }}"
		}
		var is []string
		if w.To.Set {
			is = append(is, "is "+core.CompactJSON(w.To.V))
		}
		if w.Above != nil || model.HasField(w.Inputs, "above") {
			is = append(is, "is above "+model.FieldText(w.Inputs, "above", fmtBound(w.Above)))
		}
		if w.Below != nil || model.HasField(w.Inputs, "below") {
			is = append(is, "below "+model.FieldText(w.Inputs, "below", fmtBound(w.Below)))
			if w.Above == nil && !model.HasField(w.Inputs, "above") {
				is[len(is)-1] = "is " + is[len(is)-1]
			}
		}
		if len(is) > 0 {
			d += " " + core.JoinList(is, "and")
		}
	case w.Event != "":
		d = "Wait for event " + w.Event
		if w.To.Set {
			d += " with " + core.CompactJSON(w.To.V)
		}
	case w.Expr != nil:
		d = "Wait until " + w.Expr.Src
	}
	if w.Hold != nil {
		d += " for " + durationText(w.Hold)
	}
	if w.Timeout > 0 || model.HasField(w.Inputs, "timeout") {
		then := "then the run times out"
		if w.Cont {
			then = "then the run goes on"
		}
		d += " (at most " + model.FieldText(w.Inputs, "timeout", clock.HumanDuration(w.Timeout)) + ", " + then + ")"
	}
	return d
}

func describeRepeat(r *model.RepeatStep) string {
	switch {
	case r.Count != nil:
		if r.Count.IsConst && core.CompactJSON(r.Count.Const) == "1" {
			return "Run once"
		}
		return "Repeat " + templateText(r.Count) + " times"
	case r.While != nil:
		return fmt.Sprintf("Repeat while %s (at most %s)", r.While.Src, core.Plural(r.Max, "time", ""))
	case r.Until != nil:
		return fmt.Sprintf("Repeat until %s (at most %s)", r.Until.Src, core.Plural(r.Max, "time", ""))
	case r.ForEach != nil:
		return "Repeat for each item of " + templateText(r.ForEach)
	}
	return "Repeat"
}

func templateText(t *model.Template) string {
	switch {
	case t == nil:
		return ""
	case t.IsConst:
		if s, ok := t.Const.(string); ok {
			return s
		}
		return core.CompactJSON(t.Const)
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

// eachText says that a held trigger by selector holds each state on its
// own.
func eachText(t *model.RunTrigger) string {
	if t.Selector() == nil || holdText(t, "") == "" {
		return ""
	}
	return " (each device on its own)"
}

// triggerSubject is what a state or numeric trigger watches, as plans
// say it: its entity, or `"occupancy" of any device in area "hall" (now: …)`.
func triggerSubject(t *model.RunTrigger) string {
	if sel := t.Selector(); sel != nil {
		return sel.Quantified("any") + " (" + sel.NowText() + ")"
	}
	return t.EntityID
}

// availSubject is whose availability an available trigger watches: its
// entity's device, or the device of any state its selector addresses.
func availSubject(t *model.RunTrigger) string {
	if sel := t.Selector(); sel != nil {
		return "the device of " + sel.Quantified("any") + " (" + sel.NowText() + ")"
	}
	return t.EntityID + "'s device"
}

// stepCond is the expression an if or wait step tests (nil for others).
func stepCond(s *model.RunStep) *model.Expr {
	switch x := s.More.(type) {
	case *model.IfStep:
		return x.Cond
	case *model.WaitStep:
		return x.Expr
	}
	return nil
}

// selectorsText says what the selector objects of x read, and what they
// resolved to when validated: ` (reads "occupancy" of any device of type
// "motion", now: hall_motion.occupancy)`.
func selectorsText(c *model.Compiled, x *model.Expr) string {
	if x == nil {
		return ""
	}
	var b strings.Builder
	for _, sr := range x.Sels {
		sel := sr.Sel
		sel.Resolved = c.ExprSels[sel.Key()]
		fmt.Fprintf(&b, " (%s reads %s, %s)", sr.Fn+"()", sel.Quantified("any"), sel.NowText())
	}
	return b.String()
}
