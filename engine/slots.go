package engine

import (
	"sync"
	"time"
)

// slots bounds the firings that only wait for their commands'
// acknowledgements (limited: bodies without delays and waits): at most
// maxRunning run at once, each on a goroutine of its own; the others wait
// their turn in order as a few words in backlog, not as goroutines. Past
// the broker's capacity acknowledgements come late and, unbounded, late
// firings would pile up as goroutines with their stacks
// (docs/architecture.md). Bodies with delays and waits may take minutes
// and are not limited.
type slots struct {
	mu      sync.Mutex
	running int      // firings running, limited or not
	limited int      // limited firings running
	backlog []queued // limited firings waiting for a slot, oldest first
}

// queued is a limited firing waiting for a slot, and since when.
type queued struct {
	t  task
	at time.Time
}

// task is what slots run: a *firing (an interface, so its tests need no
// house).
type task interface {
	do()           // runs to the task's end
	limited() bool // counts against maxRunning
}

// maxRunning bounds the limited firings running at once.
const maxRunning = 512

// FiringLoad is how the firing slots are used now: firings running, and
// firings waiting for a slot with the oldest's wait. A standing wait means
// events are answered late (the engine is past its capacity).
type FiringLoad struct {
	Running      int     `json:"running"`
	Slots        int     `json:"slots"`
	Waiting      int     `json:"waiting"`
	OldestWaitMS float64 `json:"oldest_wait_ms"`
}

func (s *slots) load() FiringLoad {
	s.mu.Lock()
	defer s.mu.Unlock()
	fl := FiringLoad{Running: s.running, Slots: maxRunning, Waiting: len(s.backlog)}
	if len(s.backlog) > 0 {
		fl.OldestWaitMS = float64(time.Since(s.backlog[0].at).Microseconds()) / 1000
	}
	return fl
}

// run starts f on a goroutine of its own, or queues it while maxRunning
// limited firings run.
func (s *slots) run(f task) {
	s.mu.Lock()
	if f.limited() && s.limited >= maxRunning {
		s.backlog = append(s.backlog, queued{f, time.Now()})
		s.mu.Unlock()
		return
	}
	s.take(f)
	s.mu.Unlock()
	go s.do(f)
}

// take counts f as running; s.mu is held.
func (s *slots) take(f task) {
	s.running++
	if f.limited() {
		s.limited++
	}
}

// do runs f to its end, then hands its slot to the oldest waiting firing.
func (s *slots) do(f task) {
	for f != nil {
		f.do()
		f = s.done(f)
	}
}

// done counts f as ended and returns the waiting firing that takes its
// slot (to run on the same goroutine), if any.
func (s *slots) done(f task) task {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	if !f.limited() {
		return nil
	}
	s.limited--
	if len(s.backlog) == 0 {
		return nil
	}
	next := s.backlog[0].t
	s.backlog[0] = queued{}
	s.backlog = s.backlog[1:]
	if len(s.backlog) == 0 {
		s.backlog = nil // let the array go
	}
	s.take(next)
	return next
}

// FiringLoad reports how the firing slots are used now (/healthz).
func (e *Engine) FiringLoad() FiringLoad {
	if e.sched == nil || e.sched.slots == nil {
		return FiringLoad{Slots: maxRunning}
	}
	return e.sched.slots.load()
}
