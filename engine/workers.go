package engine

import (
	"sync"
	"sync/atomic"
	"time"
)

// workers runs firings, each on a goroutine of its own (goroutines are
// not reused: the runtime sizes a new one's stack from the ones before).
//
// At most maxRunning limited tasks (firings whose body neither waits nor
// sleeps: they only wait for their commands' acknowledgements) run at
// once; the others wait their turn in order, as a few words in backlog
// rather than as goroutines. Past the broker's and the processors'
// capacity the acknowledgements come late and firings pile up: thousands
// of goroutines, each with its stack, all runnable at once when a burst
// of acknowledgements arrives, ahead of the connection's reader in the
// scheduler's queues (figures: docs/performance.md). Bodies with delays and waits are not limited: they
// may take minutes.
type workers struct {
	active atomic.Int32 // goroutines running a task

	mu      sync.Mutex
	running int      // limited tasks running
	backlog []queued // limited tasks waiting for a slot, oldest first
}

// queued is a limited task waiting for a slot, and since when.
type queued struct {
	t  task
	at time.Time
}

// FiringLoad is how the firing slots are used now: firings running, and
// firings waiting for a slot with the oldest's wait. A standing wait means
// events are answered late (the engine is past its capacity).
type FiringLoad struct {
	Running      int     `json:"running"`
	Slots        int     `json:"slots"`
	Waiting      int     `json:"waiting"`
	OldestWaitMS float64 `json:"oldest_wait_ms"`
}

func (w *workers) load() FiringLoad {
	w.mu.Lock()
	defer w.mu.Unlock()
	fl := FiringLoad{Running: w.running, Slots: maxRunning, Waiting: len(w.backlog)}
	if len(w.backlog) > 0 {
		fl.OldestWaitMS = float64(time.Since(w.backlog[0].at).Microseconds()) / 1000
	}
	return fl
}

// task is work for a worker (a *firing: no closure to allocate per run).
type task interface {
	// do runs the task and reports whether it is over. One that is not
	// goes on without the worker; a limited one keeps its slot until it
	// calls finished.
	do() bool
	limited() bool // counts against maxRunning
}

// taskFunc runs a function as an unlimited task.
type taskFunc func()

func (f taskFunc) do() bool      { f(); return true }
func (f taskFunc) limited() bool { return false }

// maxRunning bounds the limited tasks running at once.
const maxRunning = 512

func newWorkers() *workers { return &workers{} }

// run runs f on a goroutine of its own; a limited task waits in the
// backlog while maxRunning others run.
func (w *workers) run(f task) {
	if w.admit(f) {
		w.start(f)
	}
}

// runHere runs f on the calling goroutine, as a worker would: for a task
// that waits for nothing (see armedRule.here), handing it to a worker
// would cost more (a thread wake-up, a crossing between threads) than
// the task itself.
func (w *workers) runHere(f task) {
	if w.admit(f) && f.do() && f.limited() {
		w.finished()
	}
}

// admit reports whether f may run now; a limited task takes a slot, or
// waits in the backlog for one.
func (w *workers) admit(f task) bool {
	if !f.limited() {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.running >= maxRunning {
		w.backlog = append(w.backlog, queued{f, time.Now()})
		return false
	}
	w.running++
	return true
}

// start runs f, which has its slot, on a goroutine of its own.
func (w *workers) start(f task) {
	w.active.Add(1)
	go w.loop(f)
}

// finished is called when a limited task that went on without its worker
// ended: the oldest waiting one takes its slot, or the slot is freed.
func (w *workers) finished() {
	if f := w.next(); f != nil {
		w.start(f)
	}
}

// next is called when a limited task ended: the oldest waiting one takes
// its slot (run on the same goroutine), or the slot is freed.
func (w *workers) next() task {
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

// loop runs f and then, while f was a limited task that ended, the task
// that takes its slot from the backlog.
func (w *workers) loop(f task) {
	defer w.active.Add(-1)
	for f != nil {
		if over := f.do(); !over || !f.limited() {
			return
		}
		f = w.next()
	}
}

// FiringLoad reports how the firing slots are used now (/healthz).
func (e *Engine) FiringLoad() FiringLoad {
	if e.sched == nil || e.sched.work == nil {
		return FiringLoad{Slots: maxRunning}
	}
	return e.sched.work.load()
}
