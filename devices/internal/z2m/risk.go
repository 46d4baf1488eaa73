package z2m

import (
	"strings"

	"github.com/pilothouse/pilothouse/pilotage"
)

// deviceType is the first row of pilotage.DeviceTypes the device matches:
// by what it exposes, or by a word of the row in its description. Its set
// action takes the row's risk.
func (b *z2mBuilder) deviceType(def *z2mDefinition) string {
	desc := strings.ToLower(def.Description)
	for _, row := range pilotage.DeviceTypes {
		if b.exposesType(row.Type) {
			return row.Type
		}
		for _, w := range row.Words {
			if strings.Contains(desc, w) {
				return row.Type
			}
		}
	}
	return "sensor"
}

// exposesType reports whether the exposes show a device of type t.
func (b *z2mBuilder) exposesType(t string) bool {
	switch t {
	case "lock", "cover", "climate", "light", "switch", "fan":
		return b.kinds[t]
	case "garage_door":
		return b.garage
	case "siren":
		return b.securityIn
	case "alarm_panel":
		return b.armMode
	case "remote":
		return b.hasAction && len(b.act.Fields) <= 1
	case "binary_sensor":
		return b.hasBinary
	case "sensor":
		return true
	}
	return false
}
