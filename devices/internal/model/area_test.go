package model

import "testing"

func TestDescArea(t *testing.T) {
	for desc, want := range map[string]string{
		"area:kitchen":                     "kitchen",
		"Ceiling light, area:kitchen":      "kitchen",
		"In the hall (area:hall)":          "hall",
		"Area:Living_Room; by the sofa":    "Living_Room",
		"subarea:x":                        "",
		"area: kitchen":                    "",
		"no area here":                     "",
		"area:hall — TRADFRI bulb (IKEA)":  "hall",
		"first area: then area:garage end": "garage",
	} {
		if got := descArea(desc); got != want {
			t.Errorf("descArea(%q) = %q, want %q", desc, got, want)
		}
	}
}

func TestAreaRules(t *testing.T) {
	rules := []AreaRule{{Area: "hall", Devices: []string{"hall_*", "front_door"}}, {Area: "all", Devices: []string{"*"}}}
	for id, want := range map[string]string{"hall_light": "hall", "front_door": "hall", "garage_door": "all"} {
		if got := areaOf(rules, id); got != want {
			t.Errorf("areaOf(%s) = %q, want %q", id, got, want)
		}
	}
	if got := areaOf(nil, "hall_light"); got != "" {
		t.Errorf("no rules: %q", got)
	}
}
