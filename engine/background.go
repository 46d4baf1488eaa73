package engine

import (
	"runtime"
	"time"
)

// yieldSlice is how much work a background writer does between two
// yields of its processor.
const yieldSlice = 250 * time.Microsecond

// yielder lets a background writer (see background) yield its processor
// between rows or statements, at most every yieldSlice: on the thread of
// its own a yield hands the processor over to another thread and back,
// two thread wake-ups, too many to pay for every row.
type yielder struct{ last time.Time }

// yield yields the processor if yieldSlice passed since the last time.
func (y *yielder) yield() {
	if now := time.Now(); now.Sub(y.last) >= yieldSlice {
		runtime.Gosched()
		y.last = time.Now()
	}
}
