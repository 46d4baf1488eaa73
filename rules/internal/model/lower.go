package model

import (
	"slices"
)

// Lower lowers a validated program into its run form (runform.go), its
// values made and shared by in.
func Lower(p *Program, in *Interner) Form {
	var n stepCounts
	WalkSteps(p.Steps, n.add)
	lw := &lowerer{in: in,
		steps: make(slab[RunStep], n.steps), ifs: make(slab[IfStep], n.ifs),
		chooses: make(slab[ChooseStep], n.chooses), arms: make(slab[runArm], n.arms),
		repeats: make(slab[RepeatStep], n.repeats), waits: make(slab[WaitStep], n.waits),
	}
	f := Form{
		ProgramName: p.Name, description: p.Description, ParamsSchema: p.Params, max: p.Max, ThrottleFor: p.Throttle,
		mode: uint8(max(slices.Index(Modes, p.Mode), 0)), // "" (a program built by hand) is single
	}
	if len(p.Triggers) > 0 {
		f.RunTriggers = make([]RunTrigger, len(p.Triggers))
		for i, t := range p.Triggers {
			f.RunTriggers[i] = in.trigger(t)
			f.fields = f.fields || len(t.Inputs) > 0
		}
	}
	if len(p.Conditions) > 0 {
		f.Conds = make([]RunCond, len(p.Conditions))
		for i, c := range p.Conditions {
			f.Conds[i] = RunCond{ID: in.str(c.ID), Expr: in.expr(c.Expr), Window: lowerWindow(c)}
			if w := f.Conds[i].Window; w != nil && len(c.Window.Inputs) > 0 {
				w.inputs, f.fields = in.inputs(c.Window.Inputs), true
			}
		}
	}
	f.Steps = lw.list(p.Steps)
	WalkSteps(p.Steps, func(s *Step) bool {
		row, _ := StepKindOf(s.Kind)
		f.takesTime = f.takesTime || row.TakesTime
		if s.Kind == StepCall {
			f.calls++
		}
		if s.Kind == StepWait && s.Wait != nil && len(s.Wait.Inputs) > 0 {
			f.fields = true
		}
		if s.Kind == StepWait && !slices.Contains(f.WaitIDs, s.ID) {
			f.WaitIDs = append(f.WaitIDs, in.str(s.ID))
		}
		return true
	})
	slices.Sort(f.WaitIDs)
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
	in      *Interner
	steps   slab[RunStep]
	ifs     slab[IfStep]
	chooses slab[ChooseStep]
	arms    slab[runArm]
	repeats slab[RepeatStep]
	waits   slab[WaitStep]
}

// list lowers a step list into the next elements of the program's array:
// every list is contiguous, its children after it.
func (lw *lowerer) list(src []*Step) []RunStep {
	out := lw.steps.take(len(src))
	for i, s := range src {
		lw.step(&out[i], s)
	}
	return out
}

func (lw *lowerer) step(d *RunStep, s *Step) {
	in := lw.in
	d.ID = in.str(s.ID)
	d.kind = kindIndex(StepKinds, func(k StepKindInfo) bool { return k.Kind == s.Kind })
	switch s.Kind {
	case StepCall:
		d.Text, d.Vals = in.id(s.Call), in.vals(s.Args)
		if name, ok := ParamSite(s.Call); ok {
			d.Text, d.Flags = in.str(name), d.Flags|CallParam
		}
		if s.ContinueOnError {
			d.Flags |= CallContinue
		}
		if s.Target != nil {
			d.Text, d.More, d.Flags = "", s.Target, d.Flags|CallSelect
		}
	case StepDelay:
		d.More = in.dur(s.Delay)
	case StepWait:
		d.More = lw.wait(s)
	case StepIf:
		x := lw.ifs.next()
		*x = IfStep{Cond: in.expr(s.If), Then: lw.list(s.Then), Els: lw.list(s.Else)}
		d.More = x
	case StepChoose:
		x := lw.chooses.next()
		x.Arms = lw.arms.take(len(s.Choose))
		for i, a := range s.Choose {
			x.Arms[i] = runArm{Label: in.str(a.Label), When: in.expr(a.When), Do: lw.list(a.Do)}
		}
		x.Def = lw.list(s.Default)
		d.More = x
	case StepRepeat:
		x := lw.repeats.next()
		if r := s.Repeat; r != nil {
			*x = RepeatStep{Count: in.template(r.Count), ForEach: in.template(r.ForEach),
				While: in.expr(r.While), Until: in.expr(r.Until), Max: r.Max}
		}
		x.Do = lw.list(s.Do)
		d.More = x
	case StepSet:
		d.Vals = in.vals(s.Set)
	case StepStop:
		d.Text = in.str(s.Stop)
		if s.Error {
			d.Flags |= StopError
		}
	}
}

func (lw *lowerer) wait(s *Step) *WaitStep {
	in := lw.in
	x := lw.waits.next()
	x.Timeout, x.Cont = s.Timeout, s.ContinueOnTimeout
	if w := s.Wait; w != nil {
		x.State, x.Event = in.id(w.State), in.id(w.Event)
		if name, ok := ParamSite(w.State + w.Event); ok {
			x.ByParam = true
			if w.State != "" {
				x.State = in.str(name)
			} else {
				x.Event = in.str(name)
			}
		}
		x.To = Value{Set: w.To.Set, V: in.value(w.To.V)}
		x.From = Value{Set: w.From.Set, V: in.value(w.From.V)}
		x.Above, x.Below, x.Expr = w.Above, w.Below, in.expr(w.Expr)
		x.Inputs = in.inputs(w.Inputs)
		if w.For != nil {
			x.Hold = in.dur(w.For)
		}
	}
	return x
}

// trigger lowers one trigger.
func (in *Interner) trigger(t *Trigger) RunTrigger {
	rt := RunTrigger{TriggerID: in.str(t.ID), EntityID: in.id(t.Entity), Hold: t.For,
		ToValue: in.value(t.To.V), ToSet: t.To.Set, FromValue: in.value(t.From.V), FromSet: t.From.Set}
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
		rt.more = &triggerMore{text: in.str(t.Cron)}
		if len(t.Inputs) == 0 {
			rt.more.schedule = in.schedule(t.Cron, t.Schedule)
		}
	case TriggerTime:
		rt.more = &triggerMore{text: in.str(t.At)}
		if len(t.Inputs) == 0 {
			rt.more.schedule = in.schedule(TimeOfDaySpec(t.At), t.Schedule)
		}
	case TriggerSun:
		rt.more = &triggerMore{text: in.str(t.Sun), offset: t.Offset}
	case TriggerState:
		if t.NotTo.Set || t.NotFrom.Set {
			rt.more = &triggerMore{notTo: in.value(t.NotTo.V), notToSet: t.NotTo.Set, notFrom: in.value(t.NotFrom.V), notFromSet: t.NotFrom.Set}
		}
	}
	if len(t.Inputs) > 0 {
		if rt.more == nil {
			rt.more = &triggerMore{}
		}
		rt.more.inputs = in.inputs(t.Inputs)
	}
	if t.Select != nil {
		if rt.more == nil {
			rt.more = &triggerMore{}
		}
		rt.more.sel = t.Select
	}
	return rt
}
