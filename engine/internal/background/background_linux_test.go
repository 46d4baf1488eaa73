package background

import (
	"testing"

	"golang.org/x/sys/unix"
)

// niceness is the calling thread's nice value (the raw getpriority
// system call returns 20 - nice).
func niceness(t *testing.T) int {
	t.Helper()
	p, err := unix.Getpriority(unix.PRIO_PROCESS, unix.Gettid())
	if err != nil {
		t.Fatal(err)
	}
	return 20 - p
}

// TestBackgroundLowersOnlyItsThread: a goroutine that calls Lower
// runs at backgroundNice, and no other goroutine inherits it (its thread
// ends with it).
func TestBackgroundLowersOnlyItsThread(t *testing.T) {
	before := niceness(t)
	got := make(chan int)
	for range 3 {
		go func() {
			Lower()
			got <- niceness(t)
		}()
		if n := <-got; n != backgroundNice {
			t.Fatalf("a background goroutine runs at nice %d, want %d", n, backgroundNice)
		}
	}
	done := make(chan int, 8)
	for range cap(done) { // ordinary goroutines, on whatever threads there are
		go func() { done <- niceness(t) }()
	}
	for range cap(done) {
		if n := <-done; n != before {
			t.Fatalf("an ordinary goroutine runs at nice %d, want %d as before", n, before)
		}
	}
}
