package engine

import (
	"sync"
	"testing"
	"time"
)

// TestWorkersRunEverythingAndReuse: every function runs, concurrently when
// submitted concurrently (a blocked firing never holds up another), at most
// maxIdle workers stay idle, and an idle worker takes the next one.
func TestWorkersRunEverythingAndReuse(t *testing.T) {
	w := newWorkers()
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range maxIdle + 20 {
		wg.Add(1)
		w.run(taskFunc(func() { defer wg.Done(); <-release })) // all 20 blocked at once
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
