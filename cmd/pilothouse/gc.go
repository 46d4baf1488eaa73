package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"time"
)

// GC policy. Unless GOGC is set, the collector lets the heap grow to
// max(5 × live heap, live heap + headroom) between collections:
//
//   - GOGC=400 rather than 100: at thousands of events per second the
//     default spends a large share of two cores marking;
//   - a floor of gcHeadroom (PILOTHOUSE_GC_HEADROOM, in MB; 0 turns it off)
//     so a small house (a live heap of a few MB) is not collected ten times
//     a second during a burst: each collection, however small, stalls event
//     dispatch a little (measured with pilothouse bench: at 5,000 events/s
//     and 1 rule, 48 collections in 5 s gave p99 17 ms, 8 gave 8 ms).
//
// and a soft ceiling of max(gcCeiling, 2 × live heap) (a memory limit):
// GOGC=400 alone lets a big catalog's heap grow to five times its live
// size (the whole Zigbee2MQTT library, 48k entries: 350-370 MB RSS; with
// the ceiling 238-246 MB, ready in 1.4-1.5 s instead of 1.4-2.6 s, at a
// load of 6 on 2 cores). GOMEMLIMIT, when set, replaces the ceiling.
const (
	gcPercent         = 400
	defaultGCHeadroom = 128 << 20
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
// headroom, and never less than gcPercent. It moves in steps of 100 so a
// live heap that breathes a little does not move the goal every tick.
func gcPercentFor(live, headroom uint64) int {
	live = max(live, 1<<20)
	p := int(headroom*100/live) / 100 * 100
	return max(p, gcPercent)
}

// ceilingFor is the soft memory limit for a live heap: gcCeiling, or twice
// the live heap when that is more (a house that big is collected, not
// thrashed).
func ceilingFor(live uint64) int64 {
	return int64(max(gcCeiling, 2*live))
}
