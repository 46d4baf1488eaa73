package demo

import (
	"context"
	"math"
	"time"
)

// loop is the simulator's one goroutine: spontaneous changes at the
// configured pace, motion that clears after a while, and re-announcing
// after a reconnect.
func (s *Sim) loop() {
	defer s.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	nextEvent := time.Now().Add(s.nextDelay())
	for {
		wakeAt := nextEvent
		s.mu.Lock()
		if !s.motionClearAt.IsZero() && s.motionClearAt.Before(wakeAt) {
			wakeAt = s.motionClearAt
		}
		s.mu.Unlock()
		timer.Reset(time.Until(wakeAt))
		select {
		case <-s.stop:
			return
		case <-s.wake:
		case <-s.announce:
			s.reannounce()
		case now := <-timer.C:
			s.clearMotionIfDue(now)
			if s.o.Pace > 0 && !now.Before(nextEvent) {
				s.spontaneous()
				nextEvent = now.Add(s.nextDelay())
			}
		}
	}
}

func (s *Sim) reannounce() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*opTimeout)
	defer cancel()
	if err := s.announceAll(ctx); err != nil {
		s.log.Warn("re-announcing the demo devices failed", "err", err)
	}
}

// nextDelay draws the time to the next spontaneous change: exponential
// with mean Pace (a Poisson process), at least 100 ms.
func (s *Sim) nextDelay() time.Duration {
	if s.o.Pace <= 0 {
		return 24 * time.Hour
	}
	s.mu.Lock()
	x := s.rng.ExpFloat64()
	s.mu.Unlock()
	return max(time.Duration(x*float64(s.o.Pace)), 100*time.Millisecond)
}

// motionHold is how long spontaneous or triggered motion stays on.
func (s *Sim) motionHold() time.Duration {
	return max(2*s.o.Pace, 5*time.Second)
}

func (s *Sim) clearMotionIfDue(now time.Time) {
	s.mu.Lock()
	due := !s.motionClearAt.IsZero() && !now.Before(s.motionClearAt)
	if due {
		s.motionClearAt = time.Time{}
	}
	s.mu.Unlock()
	if due {
		s.do("hall_motion", func(d *device) bool {
			if d.state["occupancy"] != true {
				return false
			}
			d.state["occupancy"] = false
			return true
		})
	}
}

// do changes a device on behalf of the simulation and logs failures.
func (s *Sim) do(name string, f func(d *device) bool) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	err := s.change(ctx, name, func(d *device) (bool, error) { return f(d), nil })
	if err != nil {
		s.log.Debug("spontaneous change not published", "device", name, "err", err)
	}
}

// behaviours, with their relative weights.
var behaviours = []struct {
	weight int
	run    func(s *Sim)
}{
	{3, (*Sim).motion},
	{3, (*Sim).illuminance},
	{3, (*Sim).weatherDrift},
	{3, (*Sim).plugNoise},
	{3, (*Sim).thermostat},
	{1, (*Sim).remotePress},
}

func (s *Sim) spontaneous() {
	total := 0
	for _, b := range behaviours {
		total += b.weight
	}
	s.mu.Lock()
	n := s.rng.IntN(total)
	s.mu.Unlock()
	for _, b := range behaviours {
		if n < b.weight {
			b.run(s)
			return
		}
		n -= b.weight
	}
}

// jitter returns a uniform random number in [-r, r].
func (s *Sim) jitter(r float64) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return (s.rng.Float64()*2 - 1) * r
}

func round(x float64, decimals int) float64 {
	p := math.Pow(10, float64(decimals))
	return math.Round(x*p) / p
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

func (s *Sim) motion() {
	s.do("hall_motion", func(d *device) bool {
		if d.state["occupancy"] == true {
			return false
		}
		d.state["occupancy"] = true
		return true
	})
}

func (s *Sim) illuminance() {
	j := s.jitter(40)
	s.do("hall_motion", func(d *device) bool {
		lx, _ := d.state["illuminance"].(float64)
		d.state["illuminance"] = math.Round(clamp(lx+j, 0, 1000))
		return true
	})
}

func (s *Sim) weatherDrift() {
	dt, dh := s.jitter(0.4), s.jitter(1.5)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	err := s.changeWeather(ctx, func(r *weatherReading) error {
		r.Temperature = round(clamp(r.Temperature+dt, -20, 40), 2)
		r.Humidity = round(clamp(r.Humidity+dh, 10, 100), 2)
		return nil
	})
	if err != nil {
		s.log.Debug("weather change not published", "err", err)
	}
}

func (s *Sim) plugNoise() {
	j := s.jitter(3)
	s.do("living_plug", func(d *device) bool {
		if d.state["state"] != "ON" {
			return false
		}
		// Noise of a few percent around the draw set last, so a draw
		// someone set (a washing machine done at 3 W) stays about there.
		base := d.drawLevel
		if base <= 0 {
			base = 62
		}
		p := round(clamp(base+j*base/62, 0, 3600), 1)
		e, _ := d.state["energy"].(float64)
		d.state["power"] = p
		// Energy as if this power had been drawn since the last report.
		d.state["energy"] = round(e+p*s.o.Pace.Hours()/1000, 3)
		return true
	})
}

func (s *Sim) thermostat() {
	j := s.jitter(0.05)
	s.do("living_thermostat", func(d *device) bool {
		t, _ := d.state["local_temperature"].(float64)
		target := 17.0 // the room cools towards this when not heated
		if d.state["system_mode"] != "off" {
			target, _ = d.state["occupied_heating_setpoint"].(float64)
		}
		t += clamp(target-t, -0.3, 0.3) + j
		d.state["local_temperature"] = round(t, 2)
		d.updateRunningState()
		return true
	})
}

// remotePress presses a button as people do: mostly once, sometimes
// twice or three times quickly, sometimes held (a hold ends with a
// release).
func (s *Sim) remotePress() {
	s.mu.Lock()
	b := remoteButtons[s.rng.IntN(len(remoteButtons))]
	n := s.rng.IntN(20)
	s.mu.Unlock()
	presses := []string{b} // 12 in 20: single
	switch {
	case n >= 19:
		presses = []string{b + "_triple"}
	case n >= 16:
		presses = []string{b + "_double"}
	case n >= 12:
		presses = []string{b + "_hold", b + "_release"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	for _, a := range presses {
		if err := s.Press(ctx, a); err != nil {
			s.log.Debug("remote press not published", "err", err)
			return
		}
	}
}
