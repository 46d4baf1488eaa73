package demo

import (
	"encoding/json"
	"testing"
)

// FuzzSetCommand feeds arbitrary set payloads to every device: commands
// never panic, and whatever is applied keeps every settable property valid.
func FuzzSetCommand(f *testing.F) {
	for _, seed := range []string{
		`{"state":"ON","brightness":100}`, `{"state":"TOGGLE"}`, `{"brightness":1e400}`,
		`{"position":-1}`, `{"occupied_heating_setpoint":"22.5"}`, `{"state":null}`,
		`not json`, `[]`, `null`, `{"system_mode":"HEAT"}`, `{"lock_state":"unlocked"}`,
	} {
		f.Add("", seed)
		f.Add("state", seed)
	}
	f.Fuzz(func(t *testing.T, prop, payload string) {
		parts := []string{"dev", "set"}
		if prop != "" {
			parts = append(parts, prop)
		}
		patch, err := decodeSet(parts, []byte(payload))
		if err != nil {
			return
		}
		for _, d := range demoDevices() {
			d.applySet(patch)
			for p, e := range d.props {
				v, ok := d.state[p]
				if !ok || e.Access&accessSettable == 0 || e.Type == "composite" {
					continue
				}
				if _, err := e.coerce(v, v); err != nil {
					t.Fatalf("%s.%s = %v after %q: %v", d.name, p, v, payload, err)
				}
			}
			if _, err := json.Marshal(d.state); err != nil {
				t.Fatalf("%s state does not encode: %v", d.name, err)
			}
		}
	})
}
