//go:build !race

package main

import "time"

// raceSlowdown is how much slower the race detector makes CPU-bound work.
func raceSlowdown() time.Duration { return 1 }
