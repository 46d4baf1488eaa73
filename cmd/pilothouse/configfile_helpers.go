package main

import (
	"math"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/pilothouse/pilothouse/helpers"
)

// helpers reads the household's helpers, defined here and changed only
// here (MCP and the web UI refuse to):
//
//	helpers:
//	  - {id: vacation_mode, kind: flag}
//	  - {id: target_temp, kind: number, min: 5, max: 30, step: 0.5, unit: °C, area: living}
func (l *cfgLoader) helpers(n *yaml.Node, key string) error {
	return decodeList(l, n, key, &l.c.Helpers, itemList[helpers.Def]{what: "helpers", idKey: "id", noun: "helper", item: l.helper})
}

func (l *cfgLoader) helper() listItem[helpers.Def] {
	var d helpers.Def
	var kind string
	keys := map[string]handler{
		"id": l.str(&d.ID), "name": l.str(&d.Name), "kind": l.str(&kind), "area": l.str(&d.Area),
		"tags": l.strList(&d.Tags, nonEmpty), "unit": l.str(&d.Unit), "mode": l.str(&d.Mode),
		"min": l.float(&d.Min, -math.MaxFloat64, math.MaxFloat64), "max": l.float(&d.Max, -math.MaxFloat64, math.MaxFloat64),
		"step": l.float(&d.Step, -math.MaxFloat64, math.MaxFloat64), "options": l.strList(&d.Options, nonEmpty), "max_length": l.integer(&d.MaxLength),
		"duration": l.str(&d.Duration), "initial": l.scalar(&d.Initial),
	}
	return listItem[helpers.Def]{keys: keys, id: &d.ID,
		valid: func() error {
			d.Kind = helpers.Kind(kind)
			// Only ASCII folds: the Kelvin sign of "Kitchen" or the dotted
			// İ would become another id than the one written.
			if low := strings.ToLower(d.ID); low != d.ID && isASCII(d.ID) {
				// Ids are lowercase; the name keeps the case written.
				if d.Name == "" {
					d.Name = strings.ReplaceAll(d.ID, "_", " ")
				}
				d.ID = low
			}
			return d.Normalize()
		},
		done: func(*yaml.Node, string) (helpers.Def, error) { return d, nil }}
}

// scalar reads a plain value: a boolean, a number or a string.
func (l *cfgLoader) scalar(dst *any) handler {
	return func(n *yaml.Node, key string) error {
		if n.Kind != yaml.ScalarNode {
			return l.errAt(n, key, "want a plain value, got %s", describe(n))
		}
		var v any
		switch n.Tag {
		case "!!bool":
			var b bool
			err := n.Decode(&b)
			v = b
			if err != nil {
				return l.errAt(n, key, "want true or false")
			}
		case "!!int", "!!float":
			var f float64
			if err := n.Decode(&f); err != nil {
				return l.errAt(n, key, "want a number")
			}
			v = f
		default:
			v = n.Value
		}
		*dst = v
		return nil
	}
}

func isASCII(s string) bool {
	for i := range len(s) {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
