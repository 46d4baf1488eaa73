package main

import (
	"testing"

	"github.com/pilothouse/pilothouse/engine"
)

// TestDemoExampleLocation: the demo house declares its example location
// when none is configured; a configured one wins; without the demo there
// is none.
func TestDemoExampleLocation(t *testing.T) {
	ec := defaultConfig().engineConfig()
	if ec.Location == nil || *ec.Location != engine.DemoLocation || ec.LocationSource != engine.LocationDemo {
		t.Errorf("demo default: %+v %q", ec.Location, ec.LocationSource)
	}
	c, err := parseFlags("serve", []string{"--lat", "48.85", "--lon", "2.35"})
	if err != nil {
		t.Fatal(err)
	}
	if ec := c.engineConfig(); ec.Location == nil || ec.Location.Latitude != 48.85 || ec.LocationSource != engine.LocationConfigured {
		t.Errorf("configured: %+v %q", ec.Location, ec.LocationSource)
	}
	c, err = parseFlags("serve", []string{"--demo=false"})
	if err != nil {
		t.Fatal(err)
	}
	if ec := c.engineConfig(); ec.Location != nil {
		t.Errorf("no demo, no location: %+v", ec.Location)
	}
}
