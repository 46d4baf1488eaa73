// Package workers runs firings on reused goroutines, at most MaxRunning
// of those that only wait for acknowledgements at once.
package workers

import (
	"sync"
	"sync/atomic"
	"time"
)

// Pool runs firings on reused goroutines. A fresh goroutine starts with
// a small stack and grows it (copying it) on nearly every firing; a worker
// that already ran one has the stack it needs. A firing never waits for a
// worker to hand it to: when none is idle, a new one starts. At most
// maxIdle wait for work: after a burst the others exit at once rather than
// keep their stacks for workerIdle.
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
	idle    chan Task // unbuffered: a send succeeds only into an idle worker
	waiting atomic.Int32

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

const (
	// workerIdle is how long an idle worker waits for work before it exits.
	workerIdle = 10 * time.Second
	// maxIdle bounds the idle workers.
	maxIdle = 64
	// MaxRunning bounds the limited tasks running at once.
	MaxRunning = 512
)

// New makes an empty pool.
func New() *Pool { return &Pool{idle: make(chan Task)} }

// Run runs f on an idle worker or a new one; a limited Task waits in the
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

// start hands f, which has its slot, to an idle worker or a new one.
func (w *Pool) start(f Task) {
	select {
	case w.idle <- f:
	default:
		go w.loop(f)
	}
}

// Finished is called when a limited Task that went on without its worker
// ended: the oldest waiting one takes its slot, or the slot is freed.
func (w *Pool) Finished() {
	if f := w.next(); f != nil {
		w.start(f)
	}
}

// next is called when a limited Task ended: the oldest waiting one takes
// its slot (run by the same worker), or the slot is freed.
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

// Idle is how many workers wait for work.
func (w *Pool) Idle() int { return int(w.waiting.Load()) }

func (w *Pool) loop(f Task) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		if over := f.Do(); over && f.Limited() {
			if f = w.next(); f != nil {
				continue
			}
		}
		f = nil // do not keep the last firing alive while idle
		if w.waiting.Add(1) > maxIdle {
			w.waiting.Add(-1)
			return
		}
		t.Reset(workerIdle)
		select {
		case f = <-w.idle:
			w.waiting.Add(-1)
		case <-t.C:
			w.waiting.Add(-1)
			return
		}
	}
}
