package background

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// backgroundNice is the scheduling niceness of the recorders' threads.
const backgroundNice = 10

// Lower gives the calling goroutine a thread of its own at a lower
// scheduling priority (nice 10), for the rest of its life (the thread
// ends with it). The run and history recorders write SQLite batches of
// tens of milliseconds of CPU; at nice 10 the kernel lets the event path,
// the broker and the devices that share a small house server's cores run
// first whenever they wake, and the recorders take what is left.
func Lower() {
	runtime.LockOSThread()
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), backgroundNice)
}
