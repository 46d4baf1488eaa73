package main

import (
	"gopkg.in/yaml.v3"

	"github.com/pilothouse/pilothouse/devices"
)

// areas reads the area of devices by name pattern, in order:
//
//	areas:
//	  hall: [hall_*, front_door]
//	  living: [living_*]
func (l *cfgLoader) areas(n *yaml.Node, key string) error {
	if n.Kind != yaml.MappingNode {
		return l.errAt(n, key, "want a mapping of area names to device patterns, got %s", describe(n))
	}
	out := []devices.AreaRule{}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], deref(n.Content[i+1])
		full := key + "." + k.Value
		switch {
		case k.Kind != yaml.ScalarNode || k.Value == "":
			return l.errAt(k, key, "area names must be plain names")
		case seen[k.Value]:
			return l.errAt(k, full, "key repeated")
		}
		seen[k.Value] = true
		r := devices.AreaRule{Area: k.Value}
		if err := l.strList(&r.Devices, checkPattern)(v, full); err != nil {
			return err
		}
		if len(r.Devices) == 0 {
			return l.errAt(v, full, "want at least one device pattern (e.g. %q)", k.Value+"_*")
		}
		out = append(out, r)
	}
	l.c.Areas = out
	return nil
}
