package helpers

import (
	"time"
)

// A timer's value: state idle, active or paused; remaining, the seconds
// left when it last changed (its duration when idle); finishes_at, when
// an active timer finishes (RFC 3339, UTC), else null.

func (d *Def) applyTimer(next Value, action string, args map[string]any, now time.Time) (outcome, error) {
	state := toString(next["state"])
	switch action {
	case "start":
		dur, err := d.startDuration(next, args)
		if err != nil {
			return outcome{}, err
		}
		next["state"], next["remaining"] = TimerActive, dur.Seconds()
		next["finishes_at"] = now.Add(dur).UTC().Format(time.RFC3339Nano)
		return outcome{value: next}, nil
	case "pause":
		if state != TimerActive {
			return outcome{}, invalid("%s is %s: only an active timer pauses", d.ID, state)
		}
		left := finishesAt(next).Sub(now)
		next["state"], next["remaining"], next["finishes_at"] = TimerPaused, max(left, 0).Seconds(), nil
		return outcome{value: next}, nil
	case "cancel", "finish":
		if state == TimerIdle {
			return outcome{value: next}, nil // nothing runs: nothing to end
		}
		dur, _ := d.duration()
		next["state"], next["remaining"], next["finishes_at"] = TimerIdle, dur.Seconds(), nil
		ev := "finished"
		if action == "cancel" {
			ev = "cancelled"
		}
		return outcome{value: next, event: ev}, nil
	}
	return outcome{}, invalid("%s has no action %q", d.ID, action)
}

// startDuration is what start runs for: the call's duration, a paused
// timer's remaining time, or the timer's own duration.
func (d *Def) startDuration(cur Value, args map[string]any) (time.Duration, error) {
	if s, ok := args["duration"].(string); ok {
		return parseDuration(s)
	}
	if args["duration"] != nil {
		return 0, invalid("%s.start: duration is a string like \"PT5M\"", d.ID)
	}
	if toString(cur["state"]) == TimerPaused {
		if left, ok := number(cur["remaining"]); ok && left > 0 {
			return time.Duration(left * float64(time.Second)), nil
		}
	}
	return d.duration()
}

// finishesAt is when an active timer finishes (zero when not active).
func finishesAt(v Value) time.Time {
	t, err := time.Parse(time.RFC3339Nano, toString(v["finishes_at"]))
	if err != nil || toString(v["state"]) != TimerActive {
		return time.Time{}
	}
	return t
}
