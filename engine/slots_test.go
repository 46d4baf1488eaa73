package engine

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/pilothouse/pilothouse/internal/testutil"
)

// testTask is a task for tests: limited or not.
type testTask struct {
	fn  func()
	lim bool
}

func (t testTask) do()           { t.fn() }
func (t testTask) limited() bool { return t.lim }

// TestSlotsLimitRunningFirings: at most maxRunning limited firings run at
// once, the others start in order as slots free up, and unlimited ones
// (bodies with delays and waits) run whatever the limit.
func TestSlotsLimitRunningFirings(t *testing.T) {
	s := &slots{}
	release := make(chan struct{})
	var mu sync.Mutex
	running, peak := 0, 0
	var order []int
	var wg sync.WaitGroup
	const n = maxRunning + 50
	for i := range n {
		wg.Add(1)
		s.run(testTask{lim: true, fn: func() {
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
		}})
	}
	unlimited := make(chan struct{})
	s.run(testTask{fn: func() { close(unlimited) }})
	select {
	case <-unlimited:
	case <-time.After(10 * time.Second):
		t.Fatal("an unlimited firing waited behind the limited ones")
	}
	started := func() int { mu.Lock(); defer mu.Unlock(); return len(order) }
	testutil.Eventually(t, 10*time.Second, "every slot taken", func() bool { return started() == maxRunning })
	// Free one slot at a time and wait for the firing that takes it:
	// slots freed together could record their starts in any order even
	// though they were handed out in order.
	for k := range n - maxRunning {
		release <- struct{}{}
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("a waiting firing to start after slot %d was freed", k),
			func() bool { return started() == maxRunning+k+1 })
	}
	close(release)
	wg.Wait()
	if peak != maxRunning {
		t.Fatalf("peak %d running, want %d", peak, maxRunning)
	}
	for i, v := range order[maxRunning:] {
		if v != maxRunning+i {
			t.Fatalf("the backlog ran out of order: %v", order[maxRunning:])
		}
	}
	testutil.Eventually(t, 10*time.Second, "every firing counted as ended", func() bool {
		l := s.load()
		return l.Running == 0 && l.Waiting == 0
	})
}

// TestSlotsLoad: the slots' report counts running and waiting firings and
// how long the oldest has waited (what /healthz calls saturated).
func TestSlotsLoad(t *testing.T) {
	s := &slots{}
	release := make(chan struct{})
	var started sync.WaitGroup
	for range maxRunning + 3 {
		started.Add(1)
		s.run(testTask{lim: true, fn: func() { started.Done(); <-release }})
	}
	defer func() {
		close(release)
		started.Wait()
	}()
	testutil.Eventually(t, 10*time.Second, "every slot taken", func() bool { return s.load().Running == maxRunning })
	first := s.load()
	if first.Waiting != 3 || first.Slots != maxRunning {
		t.Fatalf("load %+v, want 3 waiting for %d slots", first, maxRunning)
	}
	testutil.Eventually(t, 10*time.Second, "the oldest wait to grow", func() bool { return s.load().OldestWaitMS > first.OldestWaitMS })
	if idle := (&slots{}).load(); idle.Waiting != 0 || idle.OldestWaitMS != 0 {
		t.Fatalf("idle load %+v", idle)
	}
}
