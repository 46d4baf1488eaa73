//go:build race

package rules

import "time"

const raceEnabled = true

// raceSlowdown scales wall-time bounds: the race detector and a loaded
// machine slow evaluation several times.
func raceSlowdown() time.Duration { return 6 }
