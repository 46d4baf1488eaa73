package ha

import "testing"

func TestExpandConfigAbbreviationsAndTilde(t *testing.T) {
	raw := map[string]any{
		"stat_t": "~SENSOR", "avty_t": "~LWT", "pl_avail": "Online", "cmd_t": "cmnd/~",
		"dev":  map[string]any{"ids": "x", "mf": "Acme", "sa": "Hall"},
		"o":    map[string]any{"name": "Tasmota", "sw": "1"},
		"avty": map[string]any{"t": "~/status", "val_tpl": "{{ value }}"},
		"~":    "tasmota01/tele/",
	}
	cfg := expandConfig(raw)
	e, err := newHAEntity("homeassistant/switch/x/config", "switch", "x", cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"state_topic": "tasmota01/tele/SENSOR", "availability_topic": "tasmota01/tele/LWT",
		"command_topic": "cmnd/tasmota01/tele/", "payload_available": "Online"}
	for k, v := range want {
		if got := e.str(k, ""); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if e.dev["manufacturer"] != "Acme" || e.dev["suggested_area"] != "Hall" || e.dev["identifiers"] != "x" || e.origin != "Tasmota" {
		t.Errorf("device/origin blocks not expanded: %v %q", e.dev, e.origin)
	}
	av, _ := cfg["availability"].([]any)
	if len(av) != 1 || av[0].(map[string]any)["topic"] != "tasmota01/tele//status" || av[0].(map[string]any)["value_template"] != "{{ value }}" {
		t.Errorf("availability item: %v", cfg["availability"])
	}
}
