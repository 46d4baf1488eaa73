package engine

import (
	"time"

	"github.com/pilothouse/pilothouse/engine/internal/sched"
	"github.com/pilothouse/pilothouse/pilotage"
	"github.com/pilothouse/pilothouse/rules"
)

// Where the server's location comes from (Config.LocationSource).
const (
	LocationConfigured = "configured"   // location.latitude/longitude (or --lat/--lon)
	LocationDemo       = "demo_example" // the demo house's declared example location
	LocationNone       = "none"
)

// Environment describes the server's time zone and location now.
func (e *Engine) Environment() *pilotage.Environment {
	now := e.Now().In(e.cfg.TimeZone)
	env := &pilotage.Environment{TimeZone: sched.ZoneText(e.cfg.TimeZone), Now: now.Format(time.RFC3339)}
	s := &env.Sun
	switch {
	case e.cfg.Location == nil:
		s.LocationSource = LocationNone
		s.Note = "no location is configured: sun triggers and sun conditions are refused (missing_location); use at/cron triggers and time conditions, or ask the operator to set location.latitude/longitude"
		return env
	case e.cfg.LocationSource == LocationDemo:
		s.LocationSource = LocationDemo
		s.Note = "the demo house's example location, not a real house's: sunrise and sunset are those of " + demoPlaceName + "; configure location.latitude/longitude for yours"
	default:
		s.LocationSource = LocationConfigured
		s.Note = "the operator-configured location"
	}
	s.Available = true
	loc := *e.cfg.Location
	s.Location = &pilotage.GeoLocation{Latitude: loc.Latitude, Longitude: loc.Longitude}
	if r, st, ok := rules.SunTimes(now, loc); ok {
		s.Sunrise, s.Sunset = r.Format(time.RFC3339), st.Format(time.RFC3339)
	}
	return env
}

// DemoLocation is the demo house's declared example location, used for
// sun triggers when the demo runs and no location is configured.
var DemoLocation = rules.Location{Latitude: 51.4779, Longitude: -0.0015}

const demoPlaceName = "the Royal Observatory, Greenwich (London)"
