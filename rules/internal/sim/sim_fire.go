package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/pilothouse/pilothouse/rules/internal/core"
	"github.com/pilothouse/pilothouse/rules/internal/interp"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// FireFor picks the trigger activation a scenario describes: its trigger
// (default the program's first), value (default the trigger's `to` (the
// first of an event's set), else the current state of its entity, else a
// value inside a numeric trigger's bounds, else the clock for time
// triggers) and from. When w is a *SimWorld the activation is simulated
// honestly (see simulate): a state trigger's entity takes the fired value
// unless the scenario's state overrides it, a held trigger fires only
// after its hold on the virtual clock, a schedule only at a time it
// fires; otherwise the activation's NotFired says why not. Because is
// "test run: scenario".
func FireFor(c *model.Compiled, sc Scenario, w model.World) (model.TriggerFire, error) {
	fire := model.TriggerFire{Time: w.Now(), Because: "test run: scenario", Value: sc.Value, From: sc.From}
	if c == nil {
		return fire, &ScenarioError{"", "no program"}
	}
	if len(c.RunTriggers) == 0 {
		if sc.Trigger != "" {
			return fire, &ScenarioError{"/scenario/trigger", fmt.Sprintf("unknown trigger %q: the program has no triggers", sc.Trigger)}
		}
		return fire, nil
	}
	t := &c.RunTriggers[0]
	if sc.Trigger != "" {
		if t = c.Trigger(sc.Trigger); t == nil {
			return fire, &ScenarioError{"/scenario/trigger", fmt.Sprintf("unknown trigger %q: want one of %s", sc.Trigger, strings.Join(c.TriggerIDs(), ", "))}
		}
	}
	fire.ID = t.TriggerID
	if t.Selector() != nil {
		fire.Entity = t.Watched()
	}
	kind := t.Kind()
	cur, hasCur := any(nil), false
	switch {
	case kind == model.TriggerAvailable:
		cur, hasCur = model.AvailableIn(w, t.Watched()), true
	case t.Watched() != "" && kind != model.TriggerEvent:
		cur, hasCur = w.State(t.Watched())
	}
	if fire.Value == nil {
		fire.Value = defaultFireValue(t, cur, hasCur, fire.Time)
	}
	if fire.From == nil {
		if t.FromSet {
			fire.From = firstOf(t.FromValue)
		} else if hasCur && !model.SameValue(cur, fire.Value) {
			fire.From = cur
		}
	}
	if sw, ok := w.(*SimWorld); ok {
		sw.simulate(t, sc, &fire)
	}
	return fire, nil
}

func defaultFireValue(t *model.RunTrigger, cur any, hasCur bool, now time.Time) any {
	switch t.Kind() {
	case model.TriggerState, model.TriggerEvent:
		if t.ToSet {
			return firstOf(t.ToValue)
		}
		return cur
	case model.TriggerAvailable:
		if t.ToSet {
			return t.ToValue
		}
		b, _ := cur.(bool)
		return !b
	case model.TriggerNumeric:
		above, below := t.Bounds()
		if x, ok := core.InterpNumber(cur); ok && (above == nil || x > *above) && (below == nil || x < *below) {
			return cur
		}
		switch {
		case above != nil && below != nil:
			return (*above + *below) / 2
		case above != nil:
			return *above + 1
		case below != nil:
			return *below - 1
		}
		return cur
	}
	return now.Format(time.RFC3339)
}

// simulate makes the activation happen in the world: the scenario's
// values must pass the trigger's filters, the entity takes the value
// (state triggers) or the event occurs, a held trigger must hold through
// the timeline, a schedule must fire at the start.
func (w *SimWorld) simulate(t *model.RunTrigger, sc Scenario, fire *model.TriggerFire) {
	if sel := t.Selector(); sel != nil && t.Watched() == "" {
		fire.NotFired = fmt.Sprintf("the trigger's selector (%s) matches no entry now: there is no state for it to fire on, and the installed rule would watch nothing until a matching device joins", sel.Quantified("any"))
		return
	}
	if why := filterMiss(t, sc); why != "" {
		fire.NotFired = why
		return
	}
	if why := crossMiss(t, fire); why != "" {
		fire.NotFired = why
		return
	}
	w.mu.Lock()
	switch t.Kind() {
	case model.TriggerEvent:
		w.scratch[t.Watched()], w.changed[t.Watched()] = fire.Value, w.Clock
	case model.TriggerState, model.TriggerNumeric:
		// The change the trigger fires on is the state the body reads, as
		// live; a scenario's state for the entity is what it was before.
		w.setLocked(t.Watched(), fire.Value)
	case model.TriggerAvailable:
		on, _ := fire.Value.(bool)
		w.setAvailLocked(t.Watched(), on)
	}
	w.mu.Unlock()
	switch t.Kind() {
	case model.TriggerCron, model.TriggerTime, model.TriggerSun:
		w.scheduleFire(t, sc.Now != nil, fire)
	case model.TriggerState, model.TriggerNumeric, model.TriggerAvailable:
		if t.Hold > 0 {
			w.holdFire(t, fire)
		}
	}
}

// filterMiss says why the scenario's own value or from would not pass
// the trigger's filters ("" when they pass or the scenario gives none).
func filterMiss(t *model.RunTrigger, sc Scenario) string {
	switch t.Kind() {
	case model.TriggerEvent:
		if sc.Value != nil && !model.EventMatches(t.To(), sc.Value) {
			return fmt.Sprintf("the scenario's value %s is not the event value the trigger waits for (%s)", interp.FormatReason(sc.Value), interp.FormatReason(t.ToValue))
		}
	case model.TriggerState, model.TriggerAvailable:
		notTo, notFrom := t.Not()
		if sc.Value != nil && (!model.EventMatches(t.To(), sc.Value) || notTo.Set && model.EventMatches(notTo, sc.Value)) {
			return fmt.Sprintf("the scenario's value %s is not one the trigger fires on (%s)", interp.FormatReason(sc.Value), filterText(t.To(), notTo, "to"))
		}
		if sc.From != nil && (!model.EventMatches(t.From(), sc.From) || notFrom.Set && model.EventMatches(notFrom, sc.From)) {
			return fmt.Sprintf("the scenario's from %s is not one the trigger fires on (%s)", interp.FormatReason(sc.From), filterText(t.From(), notFrom, "from"))
		}
	case model.TriggerNumeric:
		if sc.Value != nil {
			if matched, _ := t.Match(nil, sc.Value, false); !matched {
				return fmt.Sprintf("the scenario's value %s is not inside the trigger's bounds", interp.FormatReason(sc.Value))
			}
		}
	}
	return ""
}

// firstOf is a filter's first value: itself, or the first of its list.
func firstOf(v any) any {
	if list, ok := v.([]any); ok && len(list) > 0 {
		return list[0]
	}
	return v
}

// filterText describes a state trigger's to (or from) filter.
func filterText(v, not model.Value, name string) string {
	if not.Set {
		return "not_" + name + " " + interp.FormatReason(not.V)
	}
	return name + " " + interp.FormatReason(v.V)
}

// crossMiss says why a numeric trigger would not fire for the change from
// fire.From to fire.Value: it fires only when the value crosses into its
// range, as the installed rule does ("" when it would fire).
func crossMiss(t *model.RunTrigger, fire *model.TriggerFire) string {
	if t.Kind() != model.TriggerNumeric || fire.From == nil {
		return ""
	}
	if matched, _ := t.Match(fire.From, fire.Value, false); matched {
		return ""
	}
	if _, inside := t.Match(nil, fire.From, false); inside {
		return fmt.Sprintf("%s was already inside the trigger's range before (%s): a numeric trigger fires only when the value crosses into its range; give the value it had before as the scenario's from (pilothouse test --from)", t.Watched(), interp.FormatReason(fire.From))
	}
	return fmt.Sprintf("the value %s is not inside the trigger's range", interp.FormatReason(fire.Value))
}

// holdFire runs a held trigger's window through the timeline: the
// activation opens it at the start; a change the trigger does not keep it
// through (Keeps) closes it, a change that matches again opens a new one. The
// trigger fires when a window has lasted its hold.
func (w *SimWorld) holdFire(t *model.RunTrigger, fire *model.TriggerFire) {
	start := w.Now()
	opened, last := start, fire.Value
	value, prev := fire.Value, fire.From
	var broke string
	for {
		next, more := w.nextEntry()
		if !opened.IsZero() && (!more || next.After(opened.Add(t.Hold))) {
			break
		}
		if !more {
			break
		}
		w.advanceTo(next)
		cur := w.watched(t)
		if model.SameValue(cur, last) {
			continue
		}
		matched, _ := t.Match(last, cur, false)
		if !opened.IsZero() && !t.Keeps(prev, value, cur) {
			broke = fmt.Sprintf("%s at %s, before %s had passed", changedText(t, cur), offsetText(next.Sub(start)), model.ShortDuration(t.Hold))
			opened = time.Time{}
		}
		if matched && opened.IsZero() {
			opened, value, prev = next, cur, last
		}
		last = cur
	}
	fire.Detail = map[string]any{"for": model.ShortDuration(t.Hold)}
	if opened.IsZero() {
		fire.NotFired = "the trigger's condition did not hold for " + model.ShortDuration(t.Hold) + ": " + broke
		return
	}
	due := opened.Add(t.Hold)
	w.advanceTo(due)
	fire.Value, fire.From, fire.Time = value, prev, due
	fire.Detail["held_since"] = opened.Format(time.RFC3339)
	fire.Detail["fired_at"] = due.Format(time.RFC3339)
	fire.Because = fmt.Sprintf("test run: %s from %s and held for %s", wasText(t, value), offsetText(opened.Sub(start)), model.ShortDuration(t.Hold))
}

// wasText says what a held trigger's window held: the entity's value, or
// for an available trigger its device's reachability (the value is not
// the entity's state).
func wasText(t *model.RunTrigger, v any) string {
	if t.Kind() != model.TriggerAvailable {
		return fmt.Sprintf("%s was %s", t.Watched(), interp.FormatReason(v))
	}
	if on, _ := v.(bool); on {
		return t.Watched() + "'s device was online"
	}
	return t.Watched() + "'s device was offline"
}

// changedText says what ended a held trigger's window, in the words of
// wasText.
func changedText(t *model.RunTrigger, v any) string {
	if t.Kind() != model.TriggerAvailable {
		return fmt.Sprintf("%s changed to %s", t.Watched(), interp.FormatReason(v))
	}
	if on, _ := v.(bool); on {
		return t.Watched() + "'s device came back online"
	}
	return t.Watched() + "'s device went offline"
}

// offsetText is an offset from a test run's start ("+3m", "-1h", "the
// start").
func offsetText(d time.Duration) string {
	switch {
	case d == 0:
		return "the start"
	case d < 0:
		return "-" + model.ShortDuration(-d)
	}
	return "+" + model.ShortDuration(d)
}
