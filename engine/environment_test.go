package engine

import (
	"strings"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/rules"
)

// TestEnvironment: the manifest's environment and the core guide's server
// section say whether sun is available, where the location comes from,
// and the time zone.
func TestEnvironment(t *testing.T) {
	noon := time.Date(2026, 6, 21, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return noon }
	loc := rules.Location{Latitude: 52.52, Longitude: 13.405}
	demoLoc := DemoLocation
	for _, c := range []struct {
		name   string
		cfg    Config
		source string
		guide  string
	}{
		{"none", Config{}, LocationNone, "Sun: not available"},
		{"configured", Config{Location: &loc, LocationSource: LocationConfigured}, LocationConfigured, "at the configured location (latitude 52.52, longitude 13.405)"},
		{"configured by default", Config{Location: &loc}, LocationConfigured, "at the configured location"},
		{"demo", Config{Location: &demoLoc, LocationSource: LocationDemo}, LocationDemo, "demo house's example location** (the Royal Observatory, Greenwich"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.TimeZone, c.cfg.Now = time.UTC, clock
			e := New(c.cfg, nil, nil, quiet())
			env := e.Manifest().Languages[0].Environment
			if env == nil || env.TimeZone != "UTC" || env.Now != "2026-06-21T12:00:00Z" || env.Sun.LocationSource != c.source ||
				env.Sun.Available != (c.source != LocationNone) || env.Sun.Note == "" {
				t.Fatalf("environment %+v", env)
			}
			if env.Sun.Available && (env.Sun.Sunrise == "" || env.Sun.Sunset == "" || env.Sun.Location == nil) {
				t.Errorf("sun %+v: want today's times and the location", env.Sun)
			}
			g, _ := e.Guide("core")
			sec, ok := rules.SectionOf(g.Body, "this-server")
			if !ok || !strings.Contains(sec, c.guide) || !strings.Contains(sec, "Time zone: UTC") || strings.Contains(sec, "Limits") {
				t.Errorf("server section:\n%s", sec)
			}
			if base, _ := rules.GuideByID("core"); g.Version == base.Version || g.SizeBytes <= base.SizeBytes {
				t.Error("the served core guide's version and size must follow its body")
			}
		})
	}
}

// TestServerSectionLimits: the closed-sets guide's limits table gives the
// defaults; the core guide's server section names the limits this
// server's configuration sets apart from them (an assistant told the
// default MaxRunOps would write rules a lowered one ends).
func TestServerSectionLimits(t *testing.T) {
	lim := rules.DefaultLimits
	lim.MaxRunOps, lim.MaxWall = 1_000_000, time.Hour
	e := New(Config{Limits: lim, TimeZone: time.UTC}, nil, nil, quiet())
	g, _ := e.Guide("core")
	sec, _ := rules.SectionOf(g.Body, "this-server")
	if want := "- **Limits: configured.** The `closed-sets` guide's limits table, except `MaxWall` 1h0m0s, `MaxRunOps` 1000000.\n"; !strings.Contains(sec, want) {
		t.Errorf("server section:\n%s\nwant the line %q", sec, want)
	}
}
