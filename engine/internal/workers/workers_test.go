package workers

import (
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// TestWorkersRunEverythingAndReuse: every function runs, concurrently when
// submitted concurrently (a blocked firing never holds up another), at most
// maxIdle workers stay idle, and an idle worker takes the next one.
func TestWorkersRunEverythingAndReuse(t *testing.T) {
	w := New()
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range maxIdle + 20 {
		wg.Add(1)
		w.Run(taskFunc(func() { defer wg.Done(); <-release })) // all 20 blocked at once
	}
	close(release)
	wg.Wait()
	waitIdle := time.Now().Add(5 * time.Second)
	for w.waiting.Load() != maxIdle { // the other 20 exit
		if time.Now().After(waitIdle) {
			t.Fatalf("%d idle workers, want %d", w.waiting.Load(), maxIdle)
		}
		time.Sleep(time.Millisecond)
	}
	// Idle workers now wait for work: a submission is taken by one of them.
	deadline := time.Now().Add(5 * time.Second)
	for {
		done := make(chan struct{})
		select {
		case w.idle <- taskFunc(func() { close(done) }):
			<-done
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no idle worker took work after the first batch")
		}
		time.Sleep(time.Millisecond)
	}
}

// limitedTask is a limited Task for tests.
type limitedTask func()

func (f limitedTask) Do() bool      { f(); return true }
func (f limitedTask) Limited() bool { return true }

// TestWorkersLimitRunningFirings: at most MaxRunning limited tasks run at
// once, the others start in order as slots free up, and unlimited tasks
// (bodies with delays and waits) run whatever the limit.
func TestWorkersLimitRunningFirings(t *testing.T) {
	w := New()
	release := make(chan struct{})
	var mu sync.Mutex
	running, peak := 0, 0
	var order []int
	var wg sync.WaitGroup
	const n = MaxRunning + 50
	for i := range n {
		wg.Add(1)
		w.Run(limitedTask(func() {
			defer wg.Done()
			mu.Lock()
			running++
			peak = max(peak, running)
			order = append(order, i)
			mu.Unlock()
			<-release
			mu.Lock()
			running--
			mu.Unlock()
		}))
	}
	unlimited := make(chan struct{})
	w.Run(taskFunc(func() { close(unlimited) }))
	select {
	case <-unlimited:
	case <-time.After(5 * time.Second):
		t.Fatal("an unlimited Task waited behind the limited ones")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		r := running
		mu.Unlock()
		if r == MaxRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d limited tasks running, want %d", r, MaxRunning)
		}
		time.Sleep(time.Millisecond)
	}
	// Free one slot at a time and wait for the Task that takes it: tasks
	// start on goroutines of their own, so slots freed together could
	// record their starts in any order even though they were handed out
	// in order.
	for k := range n - MaxRunning {
		release <- struct{}{}
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Microsecond) {
			mu.Lock()
			started := len(order)
			mu.Unlock()
			if started == MaxRunning+k+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no backlog Task started after slot %d was freed", k)
			}
		}
	}
	close(release)
	wg.Wait()
	if peak != MaxRunning {
		t.Fatalf("peak %d running, want %d", peak, MaxRunning)
	}
	for i, v := range order[MaxRunning:] {
		if v != MaxRunning+i {
			t.Fatalf("backlog ran out of order: %v", order[MaxRunning:])
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		w.mu.Lock()
		r, b := w.running, len(w.backlog)
		w.mu.Unlock()
		if r == 0 && b == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after: %d running, %d waiting", r, b)
		}
	}
}

// TestWorkersLoad: the slots' report counts running and waiting firings
// and how long the oldest has waited (what /healthz calls saturated).
func TestWorkersLoad(t *testing.T) {
	w := New()
	release := make(chan struct{})
	var started sync.WaitGroup
	for range MaxRunning + 3 {
		started.Add(1)
		w.Run(limitedTask(func() { started.Done(); <-release }))
	}
	defer func() {
		close(release)
		started.Wait()
	}()
	testutil.Eventually(t, 5*time.Second, "every slot taken", func() bool { return w.Load().Running == MaxRunning })
	first := w.Load()
	if first.Waiting != 3 || first.Slots != MaxRunning {
		t.Fatalf("load %+v, want 3 waiting for %d slots", first, MaxRunning)
	}
	testutil.Eventually(t, 5*time.Second, "the oldest wait to grow", func() bool { return w.Load().OldestWaitMS > first.OldestWaitMS })
	if idle := New().Load(); idle.Waiting != 0 || idle.OldestWaitMS != 0 {
		t.Fatalf("idle load %+v", idle)
	}
}

// taskFunc runs a function as an unlimited task.
type taskFunc func()

func (f taskFunc) Do() bool      { f(); return true }
func (f taskFunc) Limited() bool { return false }
