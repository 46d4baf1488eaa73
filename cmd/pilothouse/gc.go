package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"time"
)

// GC policy. Unless GOGC is set, the collector lets the heap grow to
// max(2 × live heap, live heap + headroom) between collections:
//
//   - GOGC=100, Go's default: the heap stays near twice what is live. The
//     server ran GOGC=400 plus 128 MB of headroom before (issue 18): at
//     5,000 events/s in the peer bench it peaked at 463 MiB resident, with
//     this policy at 138 MiB for the same CPU (62–63% of a core; the
//     collections of a small live heap are short);
//   - a floor of 16 MB of headroom: after 400 MCP calls the demo house is
//     at 47 MiB resident (64 MiB with the old policy, 65 with 32 MB, 37
//     with 8 MB; the live heap is 5 MB), and a small house at 5,000
//     events/s is collected about three times a second, each time briefly;
//     PILOTHOUSE_GC_HEADROOM sets it (in MB; 0 turns it off). Without it a
//     small house (a live heap of a few MB) would be collected ten times
//     a second during a burst: each collection, however small, stalls
//     event dispatch a little.
//
// and a soft ceiling of max(gcCeiling, 2 × live heap) (a memory limit).
// It came with GOGC=400, which let a big catalog's heap grow to five times
// its live size (the whole Zigbee2MQTT library, 48k entries: 350-370 MB
// RSS; with the ceiling 238-246 MB). With GOGC=100 the goal is already
// about 2 × live, and the headroom only lifts it for heaps under 16 MB
// (a goal of at most 32 MB), so the ceiling rarely binds: it stays as a
// backstop for what the percentage does not see — a catalog burst that
// grows the heap faster than the 0.5 s tuning tick, and memory outside
// the heap (stacks, the runtime's own) — and it never throttles a heap
// that is legitimately big (2 × live). GOMEMLIMIT, when set, replaces the
// ceiling.
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
