//go:build !race

package rules

import "time"

const raceEnabled = false

func raceSlowdown() time.Duration { return 1 }
