// Package background runs the writers' goroutines beside the event path:
// a thread of their own at a lower priority, and yields between rows.
package background

import (
	"runtime"
	"time"
)

// yieldSlice is how much work a background writer does between two
// yields of its processor.
const yieldSlice = 250 * time.Microsecond

// Yielder lets a background writer (see Lower) yield its processor
// between rows or statements, at most every yieldSlice: on the thread of
// its own a yield hands the processor over to another thread and back,
// two thread wake-ups, too many to pay for every row.
type Yielder struct{ last time.Time }

// Yield yields the processor if yieldSlice passed since the last time.
func (y *Yielder) Yield() {
	if now := time.Now(); now.Sub(y.last) >= yieldSlice {
		runtime.Gosched()
		y.last = time.Now()
	}
}
