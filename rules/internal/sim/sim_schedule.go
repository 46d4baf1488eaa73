package sim

import (
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/pilothouse/pilothouse/rules/internal/clock"
	"github.com/pilothouse/pilothouse/rules/internal/model"
)

// scheduleCount is how many next firings a test run reports.
const scheduleCount = 3

// scheduleFire decides a cron, time or sun trigger in a test run. With
// scenario.now it fires only if it has a firing in the minute up to now
// (else NotFired says when it would); without, the run is simulated at
// its next firing (the world's clock, and its timeline, move there). The
// trigger entry's input lists the next firings.
func (w *SimWorld) scheduleFire(t *model.RunTrigger, hasNow bool, fire *model.TriggerFire) {
	p := model.PlaceOf(w)
	now := w.Now().In(p.Zone)
	detail := map[string]any{"time_zone": model.ZoneName(p.Zone)}
	fire.Detail = detail
	next, desc, every := nextFirings(t, p, now)
	detail["schedule"] = desc
	if every {
		detail["fires"] = "on its own period from when the rule is armed: the run is simulated at the start"
		return
	}
	if !hasNow {
		if len(next) == 0 {
			fire.NotFired = desc + " never fires from " + now.Format(time.RFC3339)
			return
		}
		w.shift(next[0].Sub(now))
		fire.Time, fire.Value = next[0], next[0].Format(time.RFC3339)
		fire.Because = "test run: " + desc + " at its next firing, " + next[0].Format("Mon 2006-01-02 15:04:05 -07:00") + " (no scenario.now)"
		detail["fires_at"] = fire.Value
		detail["note"] = "no scenario.now: the run is simulated at the next firing"
		next, _, _ = nextFirings(t, p, next[0])
		detail["next"] = timeTexts(next)
		return
	}
	detail["next"] = timeTexts(next)
	if at, ok := firesAt(t, p, now); ok {
		fire.Time, fire.Value = at, at.Format(time.RFC3339)
		detail["fires_at"] = fire.Value
		return
	}
	fire.NotFired = fmt.Sprintf("%s does not fire at %s (%s, %s)", desc, now.Format("Mon 2006-01-02 15:04:05"), model.ZoneName(p.Zone), now.Format("-07:00"))
	if len(next) > 0 {
		fire.NotFired += "; it fires next at " + strings.Join(timeTexts(next), ", ")
	}
}

// nextFirings lists a schedule's next firings after now, describes it,
// and says whether it is a fixed period (@every) that depends on when it
// was armed.
func nextFirings(t *model.RunTrigger, p clock.Place, now time.Time) (out []time.Time, desc string, every bool) {
	if t.Kind() == model.TriggerSun {
		sun, offset := t.Sun()
		desc = model.SunText(sun, offset)
		if p.Location == nil {
			return nil, desc + " (no location)", false
		}
		for at := now; len(out) < scheduleCount; {
			if at = clock.NextSunEvent(at, *p.Location, sun, offset); at.IsZero() {
				break
			}
			out = append(out, at)
		}
		return out, desc, false
	}
	desc = "cron " + t.Spec()
	if t.Kind() == model.TriggerTime {
		desc = "every day at " + t.Spec()
	}
	sch := t.Schedule()
	if _, ok := sch.(cron.ConstantDelaySchedule); ok || sch == nil {
		return nil, desc, sch != nil
	}
	for at := now; len(out) < scheduleCount; {
		if at = sch.Next(at); at.IsZero() {
			break
		}
		out = append(out, at)
	}
	return out, desc, false
}

// firesAt reports the last firing in the minute up to now, if any: the
// tick the scheduler makes at now or just before it (a schedule every 5 s
// asked at 10:00:05 fires at 10:00:05, not at the minute's first tick).
func firesAt(t *model.RunTrigger, p clock.Place, now time.Time) (time.Time, bool) {
	from := now.Add(-time.Minute)
	if t.Kind() == model.TriggerSun {
		if p.Location == nil {
			return time.Time{}, false
		}
		sun, offset := t.Sun()
		at := clock.NextSunEvent(from, *p.Location, sun, offset) // one a day at most
		return at, !at.IsZero() && !at.After(now)
	}
	var last time.Time
	sch := t.Schedule()
	// At most one tick a second: 60 steps.
	for at := sch.Next(from); !at.IsZero() && !at.After(now); at = sch.Next(at) {
		last = at
	}
	return last, !last.IsZero()
}

func timeTexts(ts []time.Time) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Format(time.RFC3339)
	}
	return out
}

// Throttle is a test run's throttle gate for a program throttled by d:
// the scenario's last_run (the body never ran when it gives none).
func (w *SimWorld) Throttle(d time.Duration) func(now time.Time) (time.Time, bool) {
	return func(now time.Time) (time.Time, bool) {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.lastRun != nil && now.Before(w.lastRun.Add(d)) {
			return w.lastRun.Add(d).In(now.Location()), true
		}
		return time.Time{}, false
	}
}

// shift moves the whole simulation by d before the run starts: the clock,
// the timeline, the changes made so far and a last_run given as an
// offset.
func (w *SimWorld) shift(d time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.Clock = w.Clock.Add(d)
	for i := range w.timeline {
		w.timeline[i].at = w.timeline[i].at.Add(d)
	}
	for id, t := range w.changed {
		w.changed[id] = t.Add(d)
	}
	if w.lastRun != nil && w.lastRunOffset {
		t := w.lastRun.Add(d)
		w.lastRun = &t
	}
}
