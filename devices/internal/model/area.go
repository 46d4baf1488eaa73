package model

import (
	"path"
	"strings"
)

// AreaRule puts the devices whose id matches one of Devices (path.Match
// patterns, e.g. "living_*") in Area. Rules are tried in order.
type AreaRule struct {
	Area    string
	Devices []string
}

// Where a device's area:<x> tag comes from, first found wins:
//
//  1. the configuration's area rules (Options.Areas), by device id;
//  2. an "area:<x>" word in the device's description: Zigbee2MQTT's
//     user description (set in its frontend, or `description:` in its
//     configuration.yaml), e.g. "Ceiling light, area:kitchen";
//  3. what the source says: Home Assistant discovery's
//     device.suggested_area.
//
// A device with none of them has no area (principals scoped by areas see
// it only with allow_no_area).

// descArea finds an "area:<x>" word in a description ("" = none). The
// area ends at white space or , ; ) ].
func descArea(desc string) string {
	low := strings.ToLower(desc)
	for i := 0; ; {
		j := strings.Index(low[i:], "area:")
		if j < 0 {
			return ""
		}
		at := i + j
		i = at + len("area:")
		if at > 0 && isWordByte(low[at-1]) {
			continue // part of another word ("subarea:")
		}
		v := desc[i:]
		if k := strings.IndexAny(v, " \t\n,;)]}"); k >= 0 {
			v = v[:k]
		}
		if v != "" {
			return v
		}
	}
}

func isWordByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9'
}

// areaOf is the configured area of a device id ("" = none).
func areaOf(rules []AreaRule, id string) string {
	for _, r := range rules {
		for _, pat := range r.Devices {
			if ok, _ := path.Match(pat, id); ok {
				return r.Area
			}
		}
	}
	return ""
}

// SetArea sets the area of a device spec just built, before its entries
// are (a built spec already carries its entries' tags); both sources call
// it, on a full rebuild and on an incremental one alike. Rule 2 reads a
// Zigbee2MQTT user description only: a Home Assistant device's
// description is made of its discovery configs' manufacturer, model and
// origin, which say nothing about areas (and a config joining the device
// could set the origin).
func SetArea(rules []AreaRule, s *Spec) {
	if s.built || s.NoDevice {
		return
	}
	if a := areaOf(rules, s.ID); a != "" {
		s.Area = a
	} else if a := descArea(s.Desc); a != "" && s.Source == "zigbee2mqtt" {
		s.Area = a
	}
}
