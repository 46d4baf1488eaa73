package clock

import (
	"math"
	"time"
)

// Location is a point on Earth, in degrees, for sun triggers and
// conditions.
type Location struct {
	Latitude  float64 `json:"latitude"`
	Longitude float64 `json:"longitude"`
}

// Place is where runs happen: the server's time zone (clock times of
// schedules and time conditions) and location (sun events; nil when not
// known).
type Place struct {
	Zone     *time.Location
	Location *Location
}

// Placed is a World that knows its Place. A World that is not Placed runs
// in UTC with no location: sun conditions then fail.
type Placed interface {
	Place() Place
}

// Sun events.
const (
	Sunrise = "sunrise"
	Sunset  = "sunset"
)

// SunTimes returns sunrise and sunset of the local day of t (the calendar
// day in t's location) at loc, using the NOAA solar position
// approximation (accurate to about a minute), in t's location. ok is false
// during polar day or night.
func SunTimes(t time.Time, loc Location) (rise, set time.Time, ok bool) {
	zone := t.Location()
	y, m, d := t.Date()
	day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	r, ok1 := sunEvent(day, loc, true)
	s, ok2 := sunEvent(day, loc, false)
	if !ok1 || !ok2 {
		return time.Time{}, time.Time{}, false
	}
	// Whole seconds: the approximation is good to a minute, and times
	// shown (RFC 3339) and given back (scenario.now) have no fraction.
	r, s = r.Truncate(time.Second), s.Truncate(time.Second)
	return onLocalDay(r, y, m, d, zone), onLocalDay(s, y, m, d, zone), true
}

// onLocalDay moves an event computed for a calendar day by whole days
// until it falls on that day in zone (the approximation answers in UT,
// which can be a day off the local date far from Greenwich).
func onLocalDay(ev time.Time, y int, m time.Month, d int, zone *time.Location) time.Time {
	want := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		ly, lm, ld := ev.In(zone).Date()
		got := time.Date(ly, lm, ld, 0, 0, 0, 0, time.UTC)
		switch {
		case got.Before(want):
			ev = ev.Add(24 * time.Hour)
		case got.After(want):
			ev = ev.Add(-24 * time.Hour)
		default:
			return ev.In(zone)
		}
	}
	return ev.In(zone)
}

// sunEvent is the NOAA approximation of one sunrise or sunset on day (a
// UTC midnight).
func sunEvent(day time.Time, loc Location, rising bool) (time.Time, bool) {
	n := float64(day.YearDay())
	lngHour := loc.Longitude / 15
	approx := n + (18-lngHour)/24
	if rising {
		approx = n + (6-lngHour)/24
	}
	M := 0.9856*approx - 3.289
	L := norm360(M + 1.916*sinDeg(M) + 0.020*sinDeg(2*M) + 282.634)
	RA := norm360(deg(math.Atan(0.91764 * tanDeg(L))))
	RA += math.Floor(L/90)*90 - math.Floor(RA/90)*90
	RA /= 15
	sinDec := 0.39782 * sinDeg(L)
	cosDec := math.Cos(math.Asin(sinDec))
	cosH := (cosDeg(90.833) - sinDec*sinDeg(loc.Latitude)) / (cosDec * cosDeg(loc.Latitude))
	if cosH > 1 || cosH < -1 {
		return time.Time{}, false
	}
	H := deg(math.Acos(cosH))
	if rising {
		H = 360 - H
	}
	T := H/15 + RA - 0.06571*approx - 6.622
	UT := math.Mod(T-lngHour+48, 24)
	return day.Add(time.Duration(UT * float64(time.Hour))), true
}

// SunEventOn is sunrise or sunset (+offset) on the local day of t, in t's
// location; ok is false when the sun does not rise (or set) that day.
func SunEventOn(t time.Time, loc Location, which string, offset time.Duration) (time.Time, bool) {
	y, m, d := t.Date()
	ev, ok := sunEvent(time.Date(y, m, d, 0, 0, 0, 0, time.UTC), loc, which == Sunrise)
	if !ok {
		return time.Time{}, false
	}
	return onLocalDay(ev.Truncate(time.Second), y, m, d, t.Location()).Add(offset), true
}

// sunHorizonDays is how far NextSunEvent looks: past the longest polar
// night or day (about six months at a pole).
const sunHorizonDays = 200

// NextSunEvent is the next sunrise or sunset (+offset) strictly after now,
// in now's location; through polar day or night it is the first one after
// it (zero when there is none within sunHorizonDays).
func NextSunEvent(now time.Time, loc Location, which string, offset time.Duration) time.Time {
	y, m, d := now.Date()
	for i := -1; i < sunHorizonDays; i++ {
		day := time.Date(y, m, d+i, 12, 0, 0, 0, now.Location())
		if ev, ok := SunEventOn(day, loc, which, offset); ok && ev.After(now) {
			return ev
		}
	}
	return time.Time{}
}

// horizonElevation is the sun's elevation, in degrees, at sunrise and
// sunset: its upper limb on the horizon, with refraction (the zenith of
// 90.833° sunEvent uses).
const HorizonElevation = -0.833

// SunElevation is the sun's elevation above the horizon at t and loc, in
// degrees (NOAA's general solar position, good to a fraction of a degree).
func SunElevation(t time.Time, loc Location) float64 {
	t = t.UTC()
	hours := float64(t.Hour()) + float64(t.Minute())/60 + float64(t.Second())/3600
	g := 2 * math.Pi / 365 * (float64(t.YearDay()-1) + (hours-12)/24)
	eqTime := 229.18 * (0.000075 + 0.001868*math.Cos(g) - 0.032077*math.Sin(g) - 0.014615*math.Cos(2*g) - 0.040849*math.Sin(2*g))
	decl := 0.006918 - 0.399912*math.Cos(g) + 0.070257*math.Sin(g) - 0.006758*math.Cos(2*g) +
		0.000907*math.Sin(2*g) - 0.002697*math.Cos(3*g) + 0.00148*math.Sin(3*g)
	solarMinutes := hours*60 + eqTime + 4*loc.Longitude
	hourAngle := solarMinutes/4 - 180
	lat := loc.Latitude * math.Pi / 180
	cosZenith := math.Sin(lat)*math.Sin(decl) + math.Cos(lat)*math.Cos(decl)*cosDeg(hourAngle)
	return 90 - deg(math.Acos(math.Max(-1, math.Min(1, cosZenith))))
}

// SunUp reports whether the sun is above the horizon at t and loc, as
// sunrise and sunset count it: all day in midnight sun, never in polar
// night.
func SunUp(t time.Time, loc Location) bool { return SunElevation(t, loc) > HorizonElevation }

func deg(r float64) float64     { return r * 180 / math.Pi }
func sinDeg(d float64) float64  { return math.Sin(d * math.Pi / 180) }
func cosDeg(d float64) float64  { return math.Cos(d * math.Pi / 180) }
func tanDeg(d float64) float64  { return math.Tan(d * math.Pi / 180) }
func norm360(x float64) float64 { return math.Mod(math.Mod(x, 360)+360, 360) }

// SunPhrase is "sunset", "15 minutes after sunset" or "1 hour and 30
// minutes before sunrise".
func SunPhrase(event string, off time.Duration) string {
	switch {
	case off > 0:
		return HumanDuration(off) + " after " + event
	case off < 0:
		return HumanDuration(-off) + " before " + event
	}
	return event
}
