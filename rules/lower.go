package rules

import (
	"slices"
)

// lower lowers a validated program into its run form (runform.go), its
// values made and shared by in.
func lower(p *Program, in *interner) form {
	var n stepCounts
	walkSteps(p.Steps, n.add)
	lw := &lowerer{in: in,
		steps: make(slab[runStep], n.steps), ifs: make(slab[ifStep], n.ifs),
		chooses: make(slab[chooseStep], n.chooses), arms: make(slab[runArm], n.arms),
		repeats: make(slab[repeatStep], n.repeats), waits: make(slab[waitStep], n.waits),
	}
	f := form{
		name: p.Name, description: p.Description, params: p.Params, max: p.Max, throttle: p.Throttle,
		mode: uint8(max(slices.Index(modes, p.Mode), 0)), // "" (a program built by hand) is single
	}
	if len(p.Triggers) > 0 {
		f.triggers = make([]RunTrigger, len(p.Triggers))
		for i, t := range p.Triggers {
			f.triggers[i] = in.trigger(t)
		}
	}
	if len(p.Conditions) > 0 {
		f.conds = make([]runCond, len(p.Conditions))
		for i, c := range p.Conditions {
			f.conds[i] = runCond{id: in.str(c.ID), x: in.expr(c.Expr), win: lowerWindow(c)}
		}
	}
	f.steps = lw.list(p.Steps)
	walkSteps(p.Steps, func(s *Step) bool {
		row, _ := stepKind(s.Kind)
		f.takesTime = f.takesTime || row.TakesTime
		if s.Kind == StepCall {
			f.calls++
		}
		if s.Kind == StepWait && !slices.Contains(f.waitIDs, s.ID) {
			f.waitIDs = append(f.waitIDs, in.str(s.ID))
		}
		return true
	})
	slices.Sort(f.waitIDs)
	return f
}

// kindIndex is the index of a kind's row in its table: len(table) for a
// kind outside it (a program built by hand), which reads as kind "".
func kindIndex[T any](table []T, is func(T) bool) uint8 {
	if i := slices.IndexFunc(table, is); i >= 0 {
		return uint8(i)
	}
	return uint8(len(table))
}

// stepCounts counts a program's steps, by the kinds that have a part of
// their own: each is allocated in one array.
type stepCounts struct{ steps, ifs, chooses, arms, repeats, waits int }

func (n *stepCounts) add(s *Step) bool {
	n.steps++
	switch s.Kind {
	case StepIf:
		n.ifs++
	case StepChoose:
		n.chooses++
		n.arms += len(s.Choose)
	case StepRepeat:
		n.repeats++
	case StepWait:
		n.waits++
	}
	return true
}

// slab hands out the elements of one array, allocated for a known count.
type slab[T any] []T

func (s *slab[T]) next() *T {
	p := &(*s)[0]
	*s = (*s)[1:]
	return p
}

// take hands out the next n elements as one list (nil for none).
func (s *slab[T]) take(n int) []T {
	if n == 0 {
		return nil
	}
	l := (*s)[:n:n]
	*s = (*s)[n:]
	return l
}

// lowerer lowers the steps of one program.
type lowerer struct {
	in      *interner
	steps   slab[runStep]
	ifs     slab[ifStep]
	chooses slab[chooseStep]
	arms    slab[runArm]
	repeats slab[repeatStep]
	waits   slab[waitStep]
}

// list lowers a step list into the next elements of the program's array:
// every list is contiguous, its children after it.
func (lw *lowerer) list(src []*Step) []runStep {
	out := lw.steps.take(len(src))
	for i, s := range src {
		lw.step(&out[i], s)
	}
	return out
}

func (lw *lowerer) step(d *runStep, s *Step) {
	in := lw.in
	d.id = in.str(s.ID)
	d.kind = kindIndex(StepKinds, func(k StepKindInfo) bool { return k.Kind == s.Kind })
	switch s.Kind {
	case StepCall:
		d.text, d.vals = in.id(s.Call), in.vals(s.Args)
		if name, ok := paramSite(s.Call); ok {
			d.text, d.flags = in.str(name), d.flags|callParam
		}
		if s.ContinueOnError {
			d.flags |= callContinue
		}
		if s.Target != nil {
			d.text, d.more, d.flags = "", s.Target, d.flags|callSelect
		}
	case StepDelay:
		d.more = in.dur(s.Delay)
	case StepWait:
		d.more = lw.wait(s)
	case StepIf:
		x := lw.ifs.next()
		*x = ifStep{cond: in.expr(s.If), then: lw.list(s.Then), els: lw.list(s.Else)}
		d.more = x
	case StepChoose:
		x := lw.chooses.next()
		x.arms = lw.arms.take(len(s.Choose))
		for i, a := range s.Choose {
			x.arms[i] = runArm{label: in.str(a.Label), when: in.expr(a.When), do: lw.list(a.Do)}
		}
		x.def = lw.list(s.Default)
		d.more = x
	case StepRepeat:
		x := lw.repeats.next()
		if r := s.Repeat; r != nil {
			*x = repeatStep{count: in.template(r.Count), forEach: in.template(r.ForEach),
				while: in.expr(r.While), until: in.expr(r.Until), max: r.Max}
		}
		x.do = lw.list(s.Do)
		d.more = x
	case StepSet:
		d.vals = in.vals(s.Set)
	case StepStop:
		d.text = in.str(s.Stop)
		if s.Error {
			d.flags |= stopError
		}
	}
}

func (lw *lowerer) wait(s *Step) *waitStep {
	in := lw.in
	x := lw.waits.next()
	x.timeout, x.cont = s.Timeout, s.ContinueOnTimeout
	if w := s.Wait; w != nil {
		x.state, x.event = in.id(w.State), in.id(w.Event)
		if name, ok := paramSite(w.State + w.Event); ok {
			x.byParam = true
			if w.State != "" {
				x.state = in.str(name)
			} else {
				x.event = in.str(name)
			}
		}
		x.to = Value{Set: w.To.Set, V: in.value(w.To.V)}
		x.from = Value{Set: w.From.Set, V: in.value(w.From.V)}
		x.above, x.below, x.expr = w.Above, w.Below, in.expr(w.Expr)
		if w.For != nil {
			x.hold = in.dur(w.For)
		}
	}
	return x
}

// trigger lowers one trigger.
func (in *interner) trigger(t *Trigger) RunTrigger {
	rt := RunTrigger{id: in.str(t.ID), entity: in.id(t.Entity), hold: t.For,
		to: in.value(t.To.V), toSet: t.To.Set, from: in.value(t.From.V), fromSet: t.From.Set}
	rt.kind = kindIndex(TriggerKinds, func(k TriggerKindInfo) bool { return k.Kind == t.Kind })
	switch t.Kind {
	case TriggerNumeric:
		m := &triggerMore{}
		if t.Above != nil {
			m.above, m.hasAbove = *t.Above, true
		}
		if t.Below != nil {
			m.below, m.hasBelow = *t.Below, true
		}
		rt.more = m
	case TriggerCron:
		rt.more = &triggerMore{schedule: in.schedule(t.Cron, t.Schedule), text: in.str(t.Cron)}
	case TriggerTime:
		rt.more = &triggerMore{schedule: in.schedule(timeOfDaySpec(t.At), t.Schedule), text: in.str(t.At)}
	case TriggerSun:
		rt.more = &triggerMore{text: in.str(t.Sun), offset: t.Offset}
	case TriggerState:
		if t.NotTo.Set || t.NotFrom.Set {
			rt.more = &triggerMore{notTo: in.value(t.NotTo.V), notToSet: t.NotTo.Set, notFrom: in.value(t.NotFrom.V), notFromSet: t.NotFrom.Set}
		}
	}
	if t.Select != nil {
		if rt.more == nil {
			rt.more = &triggerMore{}
		}
		rt.more.sel = t.Select
	}
	return rt
}
