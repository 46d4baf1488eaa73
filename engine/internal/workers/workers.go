// Package workers runs firings, each on a goroutine of its own, at most
// MaxRunning of those that only wait for acknowledgements at once.
package workers

import (
	"sync"
	"sync/atomic"
	"time"
)

// Pool runs firings, each on a goroutine of its own (goroutines are not
// reused: the runtime sizes a new one's stack from the ones before).
//
// At most MaxRunning limited tasks (firings whose body neither waits nor
// sleeps: they only wait for their commands' acknowledgements) run at
// once; the others wait their turn in order, as a few words in backlog
// rather than as goroutines. Past the broker's and the processors'
// capacity the acknowledgements come late and firings pile up: thousands
// of goroutines, each with its stack, all runnable at once when a burst
// of acknowledgements arrives, ahead of the connection's reader in the
// scheduler's queues (figures: docs/performance.md). Bodies with delays and waits are not limited: they
// may take minutes.
type Pool struct {
	active atomic.Int32 // goroutines running a Task

	mu      sync.Mutex
	running int      // limited tasks running
	backlog []queued // limited tasks waiting for a slot, oldest first
}

// queued is a limited Task waiting for a slot, and since when.
type queued struct {
	t  Task
	at time.Time
}

// Load is how the firing slots are used now: firings running, and
// firings waiting for a slot with the oldest's wait. A standing wait means
// events are answered late (the engine is past its capacity).
type Load struct {
	Running      int     `json:"running"`
	Slots        int     `json:"slots"`
	Waiting      int     `json:"waiting"`
	OldestWaitMS float64 `json:"oldest_wait_ms"`
}

// Load reports how the slots are used now.
func (w *Pool) Load() Load {
	w.mu.Lock()
	defer w.mu.Unlock()
	fl := Load{Running: w.running, Slots: MaxRunning, Waiting: len(w.backlog)}
	if len(w.backlog) > 0 {
		fl.OldestWaitMS = float64(time.Since(w.backlog[0].at).Microseconds()) / 1000
	}
	return fl
}

// Task is work for a worker (a *firing: no closure to allocate per run).
type Task interface {
	// do runs the Task and reports whether it is over. One that is not
	// goes on without the worker; a limited one keeps its slot until it
	// calls finished.
	Do() bool
	Limited() bool // counts against MaxRunning
}

// MaxRunning bounds the limited tasks running at once.
const MaxRunning = 512

// New makes an empty pool.
func New() *Pool { return &Pool{} }

// Run runs f on a goroutine of its own; a limited Task waits in the
// backlog while MaxRunning others run.
func (w *Pool) Run(f Task) {
	if w.admit(f) {
		w.start(f)
	}
}

// RunHere runs f on the calling goroutine, as a worker would: for a Task
// that waits for nothing (see armedRule.here), handing it to a worker
// would cost more (a thread wake-up, a crossing between threads) than
// the Task itself.
func (w *Pool) RunHere(f Task) {
	if w.admit(f) && f.Do() && f.Limited() {
		w.Finished()
	}
}

// admit reports whether f may run now; a limited Task takes a slot, or
// waits in the backlog for one.
func (w *Pool) admit(f Task) bool {
	if !f.Limited() {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running >= MaxRunning {
		w.backlog = append(w.backlog, queued{f, time.Now()})
		return false
	}
	w.running++
	return true
}

// start runs f, which has its slot, on a goroutine of its own.
func (w *Pool) start(f Task) {
	w.active.Add(1)
	go w.loop(f)
}

// Finished is called when a limited Task that went on without its worker
// ended: the oldest waiting one takes its slot, or the slot is freed.
func (w *Pool) Finished() {
	if f := w.next(); f != nil {
		w.start(f)
	}
}

// next is called when a limited Task ended: the oldest waiting one takes
// its slot (run on the same goroutine), or the slot is freed.
func (w *Pool) next() Task {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.backlog) == 0 {
		w.running--
		return nil
	}
	f := w.backlog[0].t
	w.backlog[0] = queued{}
	w.backlog = w.backlog[1:]
	if len(w.backlog) == 0 {
		w.backlog = nil // let the array go
	}
	return f
}

// Active is how many goroutines run a Task now.
func (w *Pool) Active() int { return int(w.active.Load()) }

// loop runs f and then, while f was a limited Task that ended, the Task
// that takes its slot from the backlog.
func (w *Pool) loop(f Task) {
	defer w.active.Add(-1)
	for f != nil {
		if over := f.Do(); !over || !f.Limited() {
			return
		}
		f = w.next()
	}
}
