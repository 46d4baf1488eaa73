package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"time"
)

// GC policy (figures: docs/performance.md, "Why the server is built as it
// is"). Unless GOGC is set, the heap may grow to max(2 × live heap, live
// heap + headroom) between collections, so a small house is not collected
// many times a second during a burst (PILOTHOUSE_GC_HEADROOM, in MB, sets
// the headroom; 0 turns it off); and a soft memory limit of
// max(gcCeiling, 2 × live heap) backstops what the percentage does not see
// (a catalog burst faster than the tuning tick, memory outside the heap)
// without throttling a heap that is legitimately big. GOMEMLIMIT, when
// set, replaces the limit.
const (
	gcPercent         = 100
	defaultGCHeadroom = 16 << 20
	gcCeiling         = 216 << 20
	gcTuneEvery       = 500 * time.Millisecond
)

func tuneGC() {
	if os.Getenv("GOGC") != "" {
		return
	}
	debug.SetGCPercent(gcPercent)
	ceiling := os.Getenv("GOMEMLIMIT") == ""
	if ceiling {
		debug.SetMemoryLimit(gcCeiling)
	}
	headroom := uint64(defaultGCHeadroom)
	if v := os.Getenv("PILOTHOUSE_GC_HEADROOM"); v != "" {
		if mb, err := strconv.ParseUint(v, 10, 32); err == nil {
			headroom = mb << 20
		}
	}
	if headroom == 0 {
		return
	}
	go func() {
		sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		last := gcPercent
		for range time.Tick(gcTuneEvery) {
			metrics.Read(sample)
			if sample[0].Value.Kind() != metrics.KindUint64 {
				return // this runtime does not report the live heap
			}
			if p := gcPercentFor(sample[0].Value.Uint64(), headroom); p != last {
				debug.SetGCPercent(p)
				last = p
			}
			if ceiling {
				debug.SetMemoryLimit(ceilingFor(sample[0].Value.Uint64()))
			}
		}
	}()
}

// gcPercentFor is the GOGC that gives a heap goal of at least live +
// headroom, and never less than gcPercent. It moves in steps of 50 so a
// live heap that breathes a little does not move the goal every tick.
func gcPercentFor(live, headroom uint64) int {
	live = max(live, 1<<20)
	p := int(headroom*100/live) / 50 * 50
	return max(p, gcPercent)
}

// ceilingFor is the soft memory limit for a live heap: gcCeiling, or twice
// the live heap when that is more (a house that big is collected, not
// thrashed).
func ceilingFor(live uint64) int64 {
	return int64(max(gcCeiling, 2*live))
}
