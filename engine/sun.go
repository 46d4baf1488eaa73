package engine

import (
	"math"
	"time"
)

// sunTimes returns sunrise and sunset (UTC) for the day of t at loc, using
// the NOAA solar position approximation (accurate to about a minute). ok is
// false during polar day or night.
func sunTimes(t time.Time, loc Location) (rise, set time.Time, ok bool) {
	y, m, d := t.UTC().Date()
	day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	n := float64(day.YearDay())
	lngHour := loc.Longitude / 15
	calc := func(rising bool) (time.Time, bool) {
		approx := n + (18-lngHour)/24
		if rising {
			approx = n + (6-lngHour)/24
		}
		M := 0.9856*approx - 3.289
		L := M + 1.916*sin(M) + 0.020*sin(2*M) + 282.634
		L = norm360(L)
		RA := deg(math.Atan(0.91764 * tan(L)))
		RA = norm360(RA)
		RA += math.Floor(L/90)*90 - math.Floor(RA/90)*90
		RA /= 15
		sinDec := 0.39782 * sin(L)
		cosDec := math.Cos(math.Asin(sinDec))
		cosH := (cos(90.833) - sinDec*sin(loc.Latitude)) / (cosDec * cos(loc.Latitude))
		if cosH > 1 || cosH < -1 {
			return time.Time{}, false
		}
		var H float64
		if rising {
			H = 360 - deg(math.Acos(cosH))
		} else {
			H = deg(math.Acos(cosH))
		}
		H /= 15
		T := H + RA - 0.06571*approx - 6.622
		UT := math.Mod(T-lngHour+48, 24)
		return day.Add(time.Duration(UT * float64(time.Hour))), true
	}
	r, ok1 := calc(true)
	s, ok2 := calc(false)
	if s.Before(r) {
		s = s.Add(24 * time.Hour)
	}
	return r, s, ok1 && ok2
}

// nextSunEvent is the next sunrise or sunset (+offset) strictly after now.
func nextSunEvent(now time.Time, loc Location, which string, offset time.Duration) time.Time {
	for i := -1; i < 3; i++ {
		day := now.Add(time.Duration(i) * 24 * time.Hour)
		r, s, ok := sunTimes(day, loc)
		if !ok {
			continue
		}
		ev := s
		if which == "sunrise" {
			ev = r
		}
		ev = ev.Add(offset)
		if ev.After(now) {
			return ev
		}
	}
	return time.Time{}
}

func rad(d float64) float64     { return d * math.Pi / 180 }
func deg(r float64) float64     { return r * 180 / math.Pi }
func sin(d float64) float64     { return math.Sin(rad(d)) }
func cos(d float64) float64     { return math.Cos(rad(d)) }
func tan(d float64) float64     { return math.Tan(rad(d)) }
func norm360(x float64) float64 { return math.Mod(math.Mod(x, 360)+360, 360) }
