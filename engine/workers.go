package engine

import "time"

// workers runs firings on reused goroutines. A fresh goroutine starts with
// a small stack and grows it (copying it) on nearly every firing; a worker
// that already ran one has the stack it needs. A firing never waits for a
// worker: when none is idle, a new one starts.
type workers struct {
	idle chan task // unbuffered: a send succeeds only into an idle worker
}

// task is work for a worker (a *firing: no closure to allocate per run).
type task interface{ do() }

// taskFunc runs a function as a task.
type taskFunc func()

func (f taskFunc) do() { f() }

// workerIdle is how long an idle worker waits for work before it exits.
const workerIdle = 10 * time.Second

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
		t.Reset(workerIdle)
		select {
		case f = <-w.idle:
		case <-t.C:
			return
		}
	}
}
