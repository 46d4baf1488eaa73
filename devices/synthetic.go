package devices

import (
	"encoding/json"
	"fmt"
)

// SyntheticZ2MHouse is a Zigbee2MQTT bridge/devices payload for
// benchmarks and tests: sensors bench_sensor_<i> with props numeric
// counters each (count0, count1, …) and as many lights bench_light_<i>
// (state and brightness). `pilothouse bench` installs one rule per counter.
func SyntheticZ2MHouse(sensors, props int) []byte {
	var devs []map[string]any
	for i := 0; i < sensors; i++ {
		var exposes []any
		for k := 0; k < props; k++ {
			exposes = append(exposes, map[string]any{"type": "numeric", "name": fmt.Sprintf("count%d", k), "property": fmt.Sprintf("count%d", k), "access": 1})
		}
		devs = append(devs, map[string]any{
			"ieee_address": fmt.Sprintf("0x%016x", i+1), "friendly_name": fmt.Sprintf("bench_sensor_%d", i), "type": "EndDevice",
			"supported": true, "interview_completed": true,
			"definition": map[string]any{"model": "BENCH-S", "vendor": "Pilothouse", "description": "bench counters", "exposes": exposes},
		}, map[string]any{
			"ieee_address": fmt.Sprintf("0x%016x", sensors+i+1), "friendly_name": fmt.Sprintf("bench_light_%d", i), "type": "Router",
			"supported": true, "interview_completed": true,
			"definition": map[string]any{"model": "BENCH-L", "vendor": "Pilothouse", "description": "bench light",
				"exposes": []any{map[string]any{"type": "light", "features": []any{
					map[string]any{"type": "binary", "name": "state", "property": "state", "access": 7, "value_on": "ON", "value_off": "OFF"},
					map[string]any{"type": "numeric", "name": "brightness", "property": "brightness", "access": 7, "value_min": 0, "value_max": 1000000000},
				}}}},
		})
	}
	b, _ := json.Marshal(devs)
	return b
}
