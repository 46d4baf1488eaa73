package demo

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrInvalid marks a Trigger or Press refused for its input (an unknown
// device, property or value): nothing was published.
var ErrInvalid = errors.New("invalid simulated change")

type invalidError struct{ msg string }

func (e invalidError) Error() string        { return e.msg }
func (e invalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, a ...any) error { return invalidError{fmt.Sprintf(format, a...)} }

// noDevice is the error for an unknown device, naming the known ones.
// Caller does not hold s.mu.
func (s *Sim) noDevice(name string) error {
	return invalidf("demo: no device %q; the demo devices: %s", name, strings.Join(s.Devices(), ", "))
}

// propertyList names a device's properties, sorted. Caller holds s.mu.
func (d *device) propertyList() string {
	var names []string
	for k := range d.props {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// GestureAction turns a gesture alone ("single", "double", "triple",
// "hold", "release") into that gesture of the remote's toggle button, so
// "press bedroom_remote single" works; anything else is left as it is.
func GestureAction(a string) string {
	g := strings.ToLower(strings.TrimSpace(a))
	if g == "single" {
		return "toggle"
	}
	if slices.Contains(remoteGestures, "_"+g) {
		return "toggle_" + g
	}
	return a
}

// DeviceNames are the demo house's device ids, as the catalog names them.
func DeviceNames() []string {
	var names []string
	for _, d := range demoDevices() {
		names = append(names, d.name)
	}
	return append(names, weatherName)
}

// OwnsKey reports whether a device id registry key (devices.IDAssignment's
// Key) is one of the demo house's devices or entities: its Zigbee2MQTT
// IEEE addresses and its Home Assistant identifiers.
func OwnsKey(key string) bool {
	if strings.Contains(key, "pilothouse_demo_") {
		return true
	}
	for _, d := range demoDevices() {
		if key == "z2m:"+d.ieee {
			return true
		}
	}
	return false
}
