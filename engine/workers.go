package engine

import (
	"sync/atomic"
	"time"
)

// workers runs firings on reused goroutines. A fresh goroutine starts with
// a small stack and grows it (copying it) on nearly every firing; a worker
// that already ran one has the stack it needs. A firing never waits for a
// worker: when none is idle, a new one starts. At most maxIdle wait for
// work: after a burst (thousands of firings waiting for their commands'
// acknowledgements at once) the others exit at once rather than keep their
// stacks for workerIdle.
type workers struct {
	idle    chan task // unbuffered: a send succeeds only into an idle worker
	waiting atomic.Int32
}

// task is work for a worker (a *firing: no closure to allocate per run).
type task interface{ do() }

// taskFunc runs a function as a task.
type taskFunc func()

func (f taskFunc) do() { f() }

// workerIdle is how long an idle worker waits for work before it exits.
const workerIdle = 10 * time.Second

// maxIdle bounds the idle workers.
const maxIdle = 64

func newWorkers() *workers { return &workers{idle: make(chan task)} }

// run runs f on an idle worker or a new one.
func (w *workers) run(f task) {
	select {
	case w.idle <- f:
	default:
		go w.loop(f)
	}
}

func (w *workers) loop(f task) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		f.do()
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
